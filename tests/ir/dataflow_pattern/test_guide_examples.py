"""Every example of the pattern-matching guide (shared/seeds/pattern-matching-in-relay.txt), nearly verbatim.

Only the spellings differ: `tvm.IRModule` is `ir.IRModule`, `tvm.nd.array(a)` is the numpy array
itself, `bind_params_by_name` is `relay.build_module.bind_params_by_name`.
"""

from __future__ import annotations

import re

import numpy as np

import ir
from ir import relay
from ir.relay.dataflow_pattern import *  # noqa: F403

bind_params_by_name = relay.build_module.bind_params_by_name

# the guide uses this name without defining it; TVM's tests define it like this
is_elemwise = wildcard().has_attr({"TOpPattern": K_ELEMWISE})(wildcard())


def test_match_op_or():
    is_add_or_sub = is_op('add') | is_op('subtract')
    assert is_add_or_sub.match(relay.op.op.get("add"))
    assert is_add_or_sub.match(relay.op.op.get("subtract"))


def test_no_match_attr():
    op = is_op('nn.dense').has_attr({"TOpPattern": K_ELEMWISE})
    op_pat = op(wildcard(), wildcard())
    x = relay.var('x')
    y = relay.var('y')
    assert not op_pat.match(relay.op.nn.dense(x, y))


def test_match_data_layout():
    is_conv2d = is_op('nn.conv2d')(wildcard(), wildcard()).has_attr({"data_layout": "NHWC"})
    x = relay.var('x')
    y = relay.var('y')
    assert not is_conv2d.match(relay.op.nn.conv2d(x, y))


def test_match_kernel_size():
    is_conv2d = is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"kernel_size": [3, 3]})
    x = relay.var('x')
    y = relay.var('y')
    assert is_conv2d.match(relay.op.nn.conv2d(x, y, kernel_size=[3, 3]))


def test_match_optional():
    conv_node = is_op('nn.conv2d')(wildcard(), wildcard())
    bias_node = is_op('nn.bias_add')(conv_node, wildcard())
    pat = bias_node.optional(lambda x: is_op('nn.relu')(x))

    x = relay.var('x')
    y = relay.var('y')
    z = relay.var('z')
    conv2d = relay.op.nn.conv2d(x, y)
    bias = relay.op.nn.bias_add(conv2d, z)
    assert pat.match(bias)
    relu = relay.op.nn.relu(bias)
    assert pat.match(relu)


def test_match_type():
    # Match any op with float32
    pat1 = has_dtype('float32')
    x = relay.var('x', shape=(10, 10), dtype='float32')
    assert pat1.match(x)

    # Match any op with shape (10, 10)
    pat2 = has_shape((10, 10))
    x = relay.var('x', shape=(10, 10), dtype='float32')
    assert pat2.match(x)

    # Match conv2d+relu with a certain shape
    conv2d = is_op('nn.conv2d')(wildcard(), wildcard())
    pat3 = is_op('nn.relu')(conv2d).has_shape((1, 32, 28, 28))

    x = relay.var('x', shape=(1, 3, 28, 28), dtype='float32')
    w = relay.var('w', shape=(32, 3, 3, 3), dtype='float32')
    conv2d = relay.nn.conv2d(x, w, strides=(1, 1), padding=(1, 1))
    relu = relay.nn.relu(conv2d)
    assert pat3.match(relu)


def test_match_tuple():
    x = relay.var('x')
    y = relay.var('y')
    z = relay.var('z')
    tuple_pattern = is_tuple((wildcard(), wildcard(), wildcard()))
    assert tuple_pattern.match(relay.expr.Tuple((x, y, z)))


def test_match_tuple_get_item():
    bn_node = is_op('nn.batch_norm')(wildcard(), wildcard(), wildcard(), wildcard(), wildcard())
    tuple_get_item_node = is_tuple_get_item(bn_node, 0)
    pat = is_op('nn.relu')(tuple_get_item_node)

    x = relay.var('x', shape=(1, 8))
    gamma = relay.var("gamma", shape=(8,))
    beta = relay.var("beta", shape=(8,))
    moving_mean = relay.var("moving_mean", shape=(8,))
    moving_var = relay.var("moving_var", shape=(8,))
    bn_node = relay.nn.batch_norm(x, gamma, beta, moving_mean, moving_var)
    tuple_get_item_node = bn_node[0]
    out = relay.nn.relu(tuple_get_item_node)
    # the guide stops here; the pattern was written for exactly this graph
    assert pat.match(out)


def test_match_func():
    x = relay.var("x")
    y = relay.var("y")
    wc1 = wildcard()
    wc2 = wildcard()
    func_pattern = FunctionPattern([wc1, wc2], wc1 + wc2)
    assert func_pattern.match(relay.Function([x, y], x + y))


def test_match_constant():
    conv2d = is_op('nn.conv2d')(wildcard(), is_constant())
    pattern = is_op('nn.bias_add')(conv2d, wildcard())

    x = relay.var('x', shape=(1, 3, 224, 224))
    w = relay.var('w', shape=(3, 3, 3, 3))
    b = relay.var('b', shape=(3, ))
    conv2d = relay.op.nn.conv2d(x, w)
    out = relay.op.nn.bias_add(conv2d, b)
    func = relay.Function([x, w, b], out)
    mod = ir.IRModule.from_expr(func)

    # Two inputs of the conv2d in the graph are VarNode by default, so no match.
    assert not pattern.match(mod['main'].body)

    # The second input (weight) has been bind with constant values so it is now a constant node.
    mod["main"] = bind_params_by_name(mod["main"],
                                      {'w': np.ones(shape=(3, 3, 3, 3))})
    assert pattern.match(mod['main'].body)


def test_match_plus_zero():
    zero = (is_expr(relay.const(0)) | is_expr(relay.const(0.0)))
    pattern = wildcard() + zero

    x = relay.Var('x')
    y = x + relay.const(0)
    assert pattern.match(y)


def test_match_function():
    pattern = wildcard().has_attr({"Composite": "add"})

    x = relay.var('x')
    y = relay.var('y')
    f = relay.Function([x, y], x + y).with_attr("Composite", "add")
    assert pattern.match(f)


def test_match_if():
    x = is_var("x")
    y = is_var("y")
    pat = is_if(is_op("less")(x, y), x, y)

    x = relay.var("x")
    y = relay.var("y")
    cond = x < y

    assert pat.match(relay.expr.If(cond, x, y))


def test_match_let():
    x = is_var("x")
    y = is_var("y")
    let_var = is_var("let")
    pat = is_let(let_var, is_op("less")(x, y), let_var)

    x = relay.var("x")
    y = relay.var("y")
    lv = relay.var("let")
    cond = x < y
    assert pat.match(relay.expr.Let(lv, cond, lv))


def test_match_diamond():
    # Pattern
    is_conv2d = is_op('nn.conv2d')(is_var(), is_var())
    path1 = is_op('nn.relu')(is_conv2d)
    path2 = is_op('nn.leaky_relu')(is_conv2d)
    diamond = is_op('add')(path1, path2)

    # Expr
    inp = relay.var('input')
    weight = relay.var('weight')
    conv2d = relay.op.nn.conv2d(inp, weight)
    relu = relay.op.nn.relu(conv2d)
    leaky_relu = relay.op.nn.leaky_relu(conv2d, alpha=0)
    out = relu + leaky_relu

    # Check
    assert diamond.match(out)


def test_match_dom_diamond():
    # Pattern
    is_conv2d = is_op('nn.conv2d')(is_var(), is_var())
    reduction = is_op('add')(wildcard(), wildcard())
    diamond = dominates(is_conv2d, is_elemwise, reduction)

    # Expr
    inp = relay.var('input')
    weight = relay.var('weight')
    conv2d = relay.op.nn.conv2d(inp, weight)
    relu = relay.op.nn.relu(conv2d)
    leaky_relu = relay.op.nn.leaky_relu(conv2d, alpha=0)
    out = relu + leaky_relu

    # Check
    assert diamond.match(out)


def test_fuzzy_patterns():
    tuple_pattern = is_tuple(None)
    func_pattern = FunctionPattern(None, wildcard() + wildcard())
    call_pattern = func_pattern(None)

    x, y, z = relay.var("x"), relay.var("y"), relay.var("z")
    assert tuple_pattern.match(relay.Tuple([x])) and tuple_pattern.match(relay.Tuple([x, y, z]))
    f1 = relay.Function([x], x + x)
    f3 = relay.Function([x, y, z], x + y + z)
    assert call_pattern.match(f1(x)) and call_pattern.match(f3(x, y, z))
    # "fuzzy bodies": the body pattern under-constrains the function
    fuzzy = FunctionPattern([is_var(), is_var()], wildcard() + wildcard())
    assert fuzzy.match(relay.Function([x, y], x + y))
    assert fuzzy.match(relay.Function([x, y], x * x + y))


class BatchnormCallback(DFPatternCallback):
    # A callback class to rewrite the matched pattern to a batch_norm op.
    def __init__(self, require_type=False):
        super().__init__(require_type)
        self.x = wildcard()
        self.var = wildcard()
        self.mean = wildcard()
        self.beta = wildcard()
        self.gamma = wildcard()
        self.eps = wildcard()

        self.pattern = self.gamma * (self.x - self.mean)/is_op("sqrt")(self.var + self.eps) + self.beta

    def callback(self, pre, post, node_map):
        x = node_map[self.x][0]
        var = node_map[self.var][0]
        mean = node_map[self.mean][0]
        beta = node_map[self.beta][0]
        gamma = node_map[self.gamma][0]
        eps = node_map[self.eps][0]
        epsilon = eps.data.numpy().item()
        return relay.op.nn.batch_norm(x, gamma, beta, mean, var, epsilon=epsilon)[0]


def test_batchnorm_rewrite():
    # A graph of arithmetic operators that are functional equivalent to batch_norm.
    x = relay.var('x')
    var = relay.var('var')
    mean = relay.var('mean')
    beta = relay.var('beta')
    gamma = relay.var('gamma')
    BN = gamma * (x - mean)/relay.op.sqrt(var + relay.const(1e-5)) + beta

    from ir.relay.dataflow_pattern import rewrite
    out = rewrite(BatchnormCallback(), BN)
    assert ir.structural_equal(out, relay.op.nn.batch_norm(x, gamma, beta, mean, var, epsilon=1e-5)[0])


def test_partition_conv2d_relu():
    # A pattern matching conv2d+relu.
    pattern = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))

    # A graph.
    x = relay.var('input')
    w = relay.var('weight')
    conv2d = relay.op.nn.conv2d(x, w)
    relu = relay.op.nn.relu(conv2d)

    xf, wf = relay.var("xf"), relay.var("wf")
    func = relay.Function([xf, wf], relay.op.nn.relu(relay.op.nn.conv2d(xf, wf)))
    partitioned = pattern.partition(relu)
    assert ir.structural_equal(partitioned, func.with_attr("PartitionedFromPattern", "nn.conv2d_nn.relu_")(x, w))
    # Note that you can also specify the attributes for the created functions:
    with_attrs = pattern.partition(relu, {'Composite': 'one_layer'})
    expected = func.with_attr("PartitionedFromPattern", "nn.conv2d_nn.relu_").with_attr("Composite", "one_layer")
    assert ir.structural_equal(with_attrs, expected(x, w))


def test_partition_printed_form():
    """The guide's printed conv2d + bias_add partition (its comment shows this graph)."""
    pattern = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard())
    x = relay.var("x", shape=(1, 3, 224, 224))
    w = relay.var("w", shape=(3, 3, 3, 3))
    b = relay.var("b", shape=(3,))
    text = str(pattern.partition(relay.nn.bias_add(relay.nn.conv2d(x, w), b), {"Composite": "one_layer"}))
    head = re.search(r"fn \((.*?)\) \{", text, re.DOTALL).group(1)
    params = re.findall(r"%FunctionVar_\d+_\d+", head)
    assert params == ["%FunctionVar_0_0", "%FunctionVar_0_1", "%FunctionVar_0_2"]
    assert 'Composite="one_layer"' in head and 'PartitionedFromPattern="nn.conv2d_nn.bias_add_"' in head
    assert "nn.conv2d(%FunctionVar_0_0, %FunctionVar_0_1)" in text
    assert "nn.bias_add(%0, %FunctionVar_0_2)" in text
    assert text.rstrip().endswith("(%x, %w, %b)")


def test_partition_with_check():
    pattern = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))

    def check(pre):
        conv = pre.args[0]
        return (conv.attrs.data_layout == "NCHW") and bool(conv.checked_type.shape[0] == 1)

    def graph(batch, layout):
        shape = (batch, 3, 8, 8) if layout == "NCHW" else (batch, 8, 8, 3)
        x = relay.var("x", shape=shape)
        w = relay.var("w", shape=(4, 3, 3, 3))
        return ir.infer_type(relay.nn.relu(relay.nn.conv2d(x, w, data_layout=layout)))

    relu = graph(1, "NCHW")
    partitioned = pattern.partition(relu, check=check)
    assert partitioned.op.attrs["PartitionedFromPattern"] == "nn.conv2d_nn.relu_"
    for rejected in (graph(2, "NCHW"), graph(1, "NHWC")):
        assert pattern.partition(rejected, check=check) is rejected
