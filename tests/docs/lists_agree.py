# SPDX-License-Identifier: Apache-2.0
"""What the docs tests that compare two lists share (test_flag_lists.py, test_metric_list.py)."""
import sys


def lists_agree(a_name, a, b_name, b, at_least, too_few):
    """Exit 1 with every difference unless sets a and b agree both ways and a holds at least at_least
    names (fewer says the reading of a broke: too_few tells it); print PASS when they agree."""
    problems = [f"{n} is in {a_name}, not in {b_name}" for n in sorted(a - b)]
    problems += [f"{n} is in {b_name}, not in {a_name}" for n in sorted(b - a)]
    if len(a) < at_least:
        problems.append(too_few)
    if problems:
        print("FAIL:", "; ".join(problems))
        sys.exit(1)
    print("PASS")
