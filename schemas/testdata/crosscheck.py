"""The second JSON Schema implementation for TestSecondImplementationAgrees.

Reads JSON lines {"schema": NAME, "doc": TEXT} on stdin and writes, per line,
"valid" or "invalid <first error>" as Python's jsonschema (draft 2020-12,
format assertions on) judges TEXT against schemas/NAME.schema.json, the
$refs between the schema files resolved locally.

Two things are adjusted so the judgement is JSON Schema's and not Python's:
- pattern: JSON Schema patterns are ECMA-262, where "$" (no multiline flag)
  matches only at the end of the input; Python's "$" also matches before a
  final newline. A pattern's final "$" is read as Python's \\Z.
- format date-time: Debian's python3-jsonschema asserts it only with the
  rfc3339-validator module, which Debian does not package; RFC 3339's
  grammar (section 5.6, with its leap-second rule) is checked here instead.
"""

import datetime
import json
import os
import re
import sys

import jsonschema
from jsonschema import validators

BASE = "https://agora.dev/schemas/"
HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.dirname(HERE)


def ecma_pattern(pattern):
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + "\\Z"
    return pattern


def pattern_keyword(validator, pattern, instance, schema):
    if validator.is_type(instance, "string") and not re.search(ecma_pattern(pattern), instance):
        yield jsonschema.ValidationError("%r does not match %r" % (instance, pattern))


DATE_TIME = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"([Zz]|([+-])([0-9]{2}):([0-9]{2}))\Z"
)


def is_date_time(instance):
    if not isinstance(instance, str):
        return True
    m = DATE_TIME.match(instance)
    if not m:
        return False
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    if hour > 23 or minute > 59 or second > 60:
        return False
    offset = 0
    if m.group(9):
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            return False
        offset = (oh * 60 + om) * (1 if m.group(9) == "+" else -1)
    if second == 60:
        # A leap second is 23:59:60 in UTC.
        utc = (hour * 60 + minute - offset) % (24 * 60)
        if utc != 23 * 60 + 59:
            return False
    return True


def main():
    store = {}
    for name in os.listdir(SCHEMAS):
        if name.endswith(".schema.json"):
            with open(os.path.join(SCHEMAS, name), encoding="utf-8") as f:
                store[BASE + name] = json.load(f)
    checker = jsonschema.FormatChecker()
    checker.checkers["date-time"] = (is_date_time, ())
    cls = validators.extend(jsonschema.Draft202012Validator, {"pattern": pattern_keyword})
    compiled = {}
    for line in sys.stdin:
        req = json.loads(line)
        uri = BASE + req["schema"] + ".schema.json"
        if uri not in compiled:
            schema = store[uri]
            cls.check_schema(schema)
            resolver = jsonschema.RefResolver(uri, schema, store=store)
            compiled[uri] = cls(schema, resolver=resolver, format_checker=checker)
        try:
            doc = json.loads(req["doc"])
        except ValueError as e:
            print("invalid not JSON: %s" % e)
            continue
        err = jsonschema.exceptions.best_match(compiled[uri].iter_errors(doc))
        if err is None:
            print("valid")
        else:
            print("invalid %s: %s" % ("/" + "/".join(str(p) for p in err.absolute_path), err.message.replace("\n", " ")))
    sys.stdout.flush()


if __name__ == "__main__":
    print("jsonschema %s" % jsonschema.__version__ if hasattr(jsonschema, "__version__") else "jsonschema", file=sys.stderr)
    main()
