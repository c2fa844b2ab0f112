"""The Python API reference pages: one `::: name` block per public name, from `keras_bert_app`'s own table.

`import keras_bert_app as kba` exposes the names of `keras_bert_app.__all__`;
each lives in one module (the package imports it on first use). The pages
group them by subpackage, and mkdocstrings renders each from its docstring.
`BertTask`, the base of the task models and pretrainers, is documented on
the Models page, and each of its subclasses' pages shows the methods users
call on it (`compile`, `from_preset`, `save_to_preset`) with their
signatures, whether the class defines them or inherits them.
"""

import inspect

import keras_bert_app

PAGES = {  # subpackage -> (page, title)
    "models": ("models", "Models"),
    "preprocessing": ("preprocessing", "Text preprocessing"),
    "data": ("data", "Data"),
    "training": ("training", "Training"),
    "evaluation": ("evaluation", "Evaluation"),
    "convert": ("convert", "Conversion"),
    "export": ("export", "Export"),
    "demo": ("demo", "Demo and studies"),
    "tasks": ("tasks", "Tasks"),
}
MODULE_PAGE = ("presets-and-errors", "Presets and errors")
MODULES = ("keras_bert_app.presets", "keras_bert_app.errors")
BASE = "keras_bert_app.models.bert_task.BertTask"
INHERITED = ("compile", "from_preset", "save_to_preset")  # what a user calls on every BertTask


def block(name, module):
    """The `::: path` block of one public name (a BertTask subclass: with BertTask's user methods)."""
    from keras_bert_app.models.bert_task import BertTask

    value = getattr(keras_bert_app, name)
    if inspect.isclass(value) and issubclass(value, BertTask):
        members = ", ".join(INHERITED)
        return (f"::: {module}.{name}\n    options:\n      inherited_members: [{members}]\n\n"
                f"Base: [`BertTask`][{BASE}], which gives it `compile`, `from_preset` and `save_to_preset`.\n")
    return f"::: {module}.{name}\n"


def public_names():
    """[(name, defining module)] of `kba`'s public names, in the package's order."""
    table = keras_bert_app._PUBLIC  # the package's own name -> module table (imports nothing)
    return [(name, table[name]) for name in keras_bert_app.__all__ if name in table]


def render():
    """{page file name: Markdown} of the API reference, the overview included."""
    by_page = {page: [] for page, _ in PAGES.values()}
    other = []
    for name, module in public_names():
        subpackage = module.split(".")[1]
        (by_page[PAGES[subpackage][0]] if subpackage in PAGES else other).append((name, module))
    titles = dict(PAGES.values())
    pages = {}
    for page, names in by_page.items():
        blocks = [f"# {titles[page]}", ""]
        blocks += [block(name, module) for name, module in names] or ["No public names here."]
        if page == "models":
            blocks.append(f"::: {BASE}\n    options:\n      members: [{', '.join(INHERITED)}, default_optimizer]\n")
        pages[f"{page}.md"] = "\n".join(blocks) + "\n"
    pages[f"{MODULE_PAGE[0]}.md"] = "\n".join(
        [f"# {MODULE_PAGE[1]}", ""] + [f"::: {module}\n    options:\n      show_root_heading: true\n"
                                        for module in MODULES]) + "\n"
    rows = [f"| [`kba.{name}`][{module}.{name}] | `{module}` |" for name, module in public_names()]
    overview = [
        "# Python API",
        "",
        "Everything below is importable as `import keras_bert_app as kba; kba.NAME`. The model side (models, layers)",
        "imports only Keras and NumPy; the text side imports TensorFlow on first use. Stage functions take keyword",
        "arguments, return their result and raise `keras_bert_app.errors` exceptions.",
        "",
        "| name | defined in |",
        "|---|---|",
        *rows,
    ]
    overview += ["", *[block(name, module) for name, module in other]]
    pages["index.md"] = "\n".join(overview) + "\n"
    return pages
