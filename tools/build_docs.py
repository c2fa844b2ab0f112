"""Build the documentation site: generated pages first, then `mkdocs build --strict` into site/.

    python tools/build_docs.py                      # generate + build (what CI runs); needs the `docs` extra
    python tools/build_docs.py generate             # only write the generated pages into docs/
    python tools/build_docs.py collect quickstart quickstart_run     # take a new run's results
    python tools/build_docs.py collect benchmarks bench.json
    python tools/build_docs.py collect objectives-study runs/objectives_study   # + task/*.csv, report.md
    mkdocs serve                                    # preview; the hook in mkdocs.yml generates the pages too

Generated (not committed): docs/changelog.md (a copy of CHANGELOG.md, so that
both GitHub and the site show it), docs/reference/cli.md from the `keras-bert-app`
parsers, docs/reference/api/*.md from `keras_bert_app.__all__`, and one page
per entry of `docs_results.RESULTS` from the JSON under docs/results/data/.
A results file that is missing or written by another version of its command
stops the build with one line naming the file and the problem (exit code 2).
"""

import argparse
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docs_api_reference  # noqa: E402
import docs_cli_reference  # noqa: E402
import docs_results_plots  # noqa: E402
import docs_results  # noqa: E402
import docs_results_pages  # noqa: E402
from docs_results import ResultsError  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = REPO_ROOT / "docs"
RENDERERS = {
    "benchmarks": docs_results_pages.benchmarks,
    "finetune-parity": docs_results_pages.finetune_parity,
    "serving": docs_results_pages.serving,
    "objectives-study": docs_results_pages.objectives_study,
    "chinese-masking": docs_results_pages.chinese_masking,
    "quickstart": docs_results_pages.quickstart,
    "distillation": docs_results_pages.distillation,
    "distillation-study": docs_results_pages.distillation_study,
}


def results_page(name, data_dir=docs_results.DATA):
    """The Markdown of one results page, from its checked JSON files."""
    result = docs_results.RESULTS[name]
    files, provenance = docs_results.load_result(result, data_dir)
    folder = pathlib.Path(data_dir) / result.folder
    text = RENDERERS[name](result, files, provenance, folder) + docs_results_pages.plots(result, folder)
    if name in docs_results_plots.PLOTS:
        text += f"\n![{result.title}](plots/{name}.png)\n"
    return text


def index_findings(data_dir=docs_results.DATA):
    """The results index's findings: each results page's opening paragraph, linked (the hook puts it in)."""
    lines = []
    for name, result in docs_results.RESULTS.items():
        opening = results_page(name, data_dir).split("\n\n")[1].strip()
        lines.append(f"- **[{result.title}]({name}.md)**: {opening}")
    return "\n".join(lines)


def results_plots(data_dir=docs_results.DATA):
    """{path relative to docs/: PNG bytes} of the plots drawn from the results JSON."""
    plots = {}
    for name, (file_name, draw) in docs_results_plots.PLOTS.items():
        result = docs_results.RESULTS[name]
        files, _ = docs_results.load_result(result, data_dir)
        plots[f"results/plots/{name}.png"] = draw(files[file_name])
    return plots


def generated_pages(data_dir=docs_results.DATA):
    """{path relative to docs/: Markdown} of every generated page."""
    pages = {"reference/cli.md": docs_cli_reference.render(),
             "changelog.md": (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")}
    pages.update({f"reference/api/{name}": text for name, text in docs_api_reference.render().items()})
    pages.update({f"results/{name}.md": results_page(name, data_dir) for name in docs_results.RESULTS})
    return pages


def generate(docs_dir=DOCS, data_dir=docs_results.DATA):
    """Write the generated pages into `docs_dir` (a file is rewritten only when its text changes)."""
    outputs = {relative: text.encode("utf-8") for relative, text in generated_pages(data_dir).items()}
    outputs.update(results_plots(data_dir))
    for relative, content in outputs.items():
        path = pathlib.Path(docs_dir) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_bytes() != content:
            path.write_bytes(content)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("build", help="generate the pages, then mkdocs build --strict (the default)")
    sub.add_parser("generate", help="only write the generated pages")
    collect = sub.add_parser("collect", help="copy a finished run's result files into docs/results/data/")
    collect.add_argument("name", choices=tuple(docs_results.RESULTS))
    collect.add_argument("source", help="the run folder, or the JSON file the command wrote")
    collect.add_argument("--command", help="the command line that made it (when its JSON does not record it)")
    args = parser.parse_args(argv)
    try:
        if args.action == "collect":
            target = docs_results.collect(args.name, args.source, command=args.command)
            print(f"collected {args.source} into {docs_results.relative(target)}")
            results_page(args.name)
            return 0
        generate()
    except ResultsError as error:
        print(f"build_docs: error: {error}", file=sys.stderr)
        return 2
    if args.action == "generate":
        return 0
    environment = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its successor, at every build
    return subprocess.call([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                            str(REPO_ROOT / "mkdocs.yml")], cwd=REPO_ROOT, env=environment)


if __name__ == "__main__":
    sys.exit(main())
