"""`nexus rules save FILE`, `nexus rules list`, `nexus rules show NAME`, `nexus rules delete NAME`: the rule sets
saved for a team (the same as PUT/GET /api/rule-sets), for `nexus check --rules NAME` and `nexus batch --rules NAME`."""
from __future__ import annotations

import argparse
import json

from cloud.cli.common import fail, open_store, with_db

CLI_USER = "cli"


def register(sub: argparse._SubParsersAction) -> None:
    rules = sub.add_parser("rules", help="the rule sets saved for your team").add_subparsers(
        dest="rules_command", required=True)
    p = with_db(rules.add_parser("save", help="save a rule set file (rules.json) for the team, under its name"))
    p.add_argument("file")
    p.add_argument("--user", default=CLI_USER, help="whose team (default: cli)")
    p.set_defaults(func=cmd_save)
    p = with_db(rules.add_parser("list", help="the team's rule sets"))
    p.add_argument("--user", default=CLI_USER)
    p.set_defaults(func=cmd_list)
    for name, helptext, func in (("show", "a saved rule set as JSON", "show"), ("delete", "delete one", "delete")):
        p = with_db(rules.add_parser(name, help=helptext))
        p.add_argument("name")
        p.add_argument("--user", default=CLI_USER)
        p.set_defaults(func=cmd_show if func == "show" else cmd_delete)


def cmd_save(args: argparse.Namespace) -> int:
    from cloud.rule_sets import RuleSetError, RuleSets
    from ifc_host.rule_set import RuleSetProblem, read_rule_set_file

    try:
        rules = read_rule_set_file(args.file)
        saved = RuleSets(open_store(args)).save(args.user, rules.as_json())
    except (RuleSetProblem, RuleSetError) as exc:
        return fail(str(exc))
    print(f"Saved rule set '{saved.name}' ({len(saved.checks)} checks)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from cloud.rule_sets import RuleSets

    sets = RuleSets(open_store(args))
    listing = sets.listing(args.user)
    if not listing:
        print(f"Team {sets.team(args.user)} has no rule sets.")
    for row in listing:
        checks = ", ".join(f"{c.get('name') or c['check']} ({c['severity']})" for c in row["checks"])
        print(f"{row['name']}: {checks}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from cloud.rule_sets import RuleSets

    found = RuleSets(open_store(args)).get(args.user, args.name)
    if found is None:
        return fail(f"no rule set {args.name!r}")
    print(json.dumps(found.as_json(), indent=2, ensure_ascii=False))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from cloud.rule_sets import RuleSetError, RuleSets

    try:
        deleted = RuleSets(open_store(args)).delete(args.user, args.name)
    except RuleSetError as exc:
        return fail(str(exc))
    if not deleted:
        return fail(f"no rule set {args.name!r}")
    print(f"Deleted rule set '{args.name}'")
    return 0
