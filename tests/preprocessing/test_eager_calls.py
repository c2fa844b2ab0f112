"""Eager tokenizer calls: op by op first, the compiled graph once the work makes the trace pay; the same ids."""

import tensorflow as tf

from keras_bert_app.preprocessing import eager_calls
from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

# A word over the 200-character cap (the exact path redoes its row), literals, Chinese, accents, empty.
LINES = ["the quick brown fox", "x" * 250 + " after a long word", "foo[SEP]bar [MASK]", "中文汉字 naïve café", ""]


def test_runner_switches_after_the_stated_number_of_calls_whatever_their_size():
    calls = []
    runner = eager_calls.EagerRunner(lambda text: calls.append("graph"), lambda text: calls.append("op"))
    small, large = tf.constant(["a"]), tf.constant(["a"] * 1024)
    for index in range(eager_calls.COMPILE_AFTER):
        runner(large if index % 2 else small)  # a large batch runs op by op as fast as the graph
    assert calls == ["op"] * eager_calls.COMPILE_AFTER and not runner.compiled
    runner(small)
    assert calls[-1] == "graph" and runner.compiled


def test_op_by_op_and_compiled_graph_give_the_same_ids_and_offsets(uncased_tokenizer):
    for special in (False, True):
        tokenizer = BertTokenizer(uncased_tokenizer.get_vocabulary(), special_tokens_in_strings=special)
        batch = tf.constant(LINES * 60)  # 300 strings: the graph runs them in shards
        op_ids = tokenizer(batch).to_list()
        op_offsets = [x.to_list() for x in tokenizer.tokenize_with_offsets(batch)]
        assert not tokenizer._eager_tokenize.compiled
        assert tokenizer._tokenize_graph(batch).to_list() == op_ids
        assert [x.to_list() for x in tokenizer._tokenize_with_offsets_graph(batch)] == op_offsets
        assert op_ids[1][0] == tokenizer.unk_token_id  # the long word: one [UNK], by the exact path
        while not tokenizer._eager_tokenize.compiled:
            compiled = tokenizer(batch)
        assert compiled.to_list() == op_ids
