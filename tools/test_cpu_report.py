"""Sum the tests' CPU seconds per file and backend, slowest first.

    KBA_TEST_CPU_LOG=/tmp/cpu.log python tools/run_tests.py
    python tools/test_cpu_report.py /tmp/cpu.log [--top 30]

CPU seconds (tests/conftest.py writes them: the test's process and the
subprocesses it waited for) do not grow when other jobs share the cores, so
this finds what makes CI slow even on a busy machine. Each backend's run
takes about (its CPU seconds) / (cores) of wall time, plus start-up.
"""

import argparse
import collections


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    per_file, per_backend, per_test = collections.Counter(), collections.Counter(), collections.Counter()
    with open(args.log, encoding="utf-8") as lines:
        for line in lines:
            backend, nodeid, seconds = line.rstrip("\n").split("\t")
            per_file[(backend, nodeid.split("::")[0])] += float(seconds)
            per_backend[backend] += float(seconds)
            per_test[(backend, nodeid)] += float(seconds)
    for backend, seconds in per_backend.most_common():
        print(f"{backend:<11} {seconds:8.0f} CPU s")
    print(f"\nslowest files (of {len(per_file)}):")
    for (backend, path), seconds in per_file.most_common(args.top):
        print(f"{seconds:8.1f}  {backend:<11} {path}")
    print("\nslowest tests:")
    for (backend, nodeid), seconds in per_test.most_common(args.top):
        print(f"{seconds:8.1f}  {backend:<11} {nodeid}")


if __name__ == "__main__":
    main()
