#!/usr/bin/env python3
"""Validate a notes gold set (one folder of <style>.jsonl files) and print counts per
truth field: python3 tests/gold/validate_notes.py tests/gold/notes-heldout4

Every file holds PER_FILE notes of its style; ids are <PREFIX>-001.. in one run,
consecutive within each file, with one prefix for the whole folder."""
import json, re, sys
from collections import Counter
from pathlib import Path

if len(sys.argv) != 2:
    sys.exit("usage: validate_notes.py FOLDER")
HERE = Path(sys.argv[1]).resolve()
FILES = sorted(p.stem for p in HERE.glob("*.jsonl"))
if not FILES:
    sys.exit(f"{HERE}: no .jsonl files")
PER_FILE = 12
CANCER = {"breast", "nsclc", "sclc", "colorectal", "pancreatic", "gastric", "esophageal",
          "melanoma", "prostate", "ovarian", "endometrial", "cervical", "head_and_neck",
          "bladder", "renal", "hepatocellular", "cholangiocarcinoma", "lymphoma", "sarcoma",
          "glioma", "gastric|esophageal"}
MARKERS = {"HER2", "ER", "PR", "PD-L1", "EGFR", "ALK", "ROS1", "KRAS", "NRAS", "BRAF", "MSI",
           "BRCA", "NTRK", "MET", "RET", "TMB", "HRD", "HPV", "IDH", "MGMT", "PIK3CA", "ESR1",
           "KIT", "PDGFRA", "FGFR2", "FGFR3"}
MVALS = {"positive", "negative", "equivocal", "unknown"}
SURG = {"resected", "unresected", "not_done"}
OUTC = {"progression", "response", "ongoing", "unknown"}
STAGE = re.compile(r"^(0(a|is)?|(I|II|III|IV)([A-D][1-3]?)?)$")
TOP = {"id", "style", "text", "truth", "notes"}
TRUTH = {"cancer_type", "stage", "stage_at_diagnosis", "metastatic", "biomarkers", "surgery",
         "prior_lines"}

ID = re.compile(r"^([A-Z0-9]+)-(\d{3})$")
errors = []
rows = []
numbers = []
prefixes = set()
for name in FILES:
    path = HERE / (name + ".jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) != PER_FILE:
        errors.append(f"{name}: {len(lines)} lines, expected {PER_FILE}")
    previous = None
    for ln, line in enumerate(lines, 1):
        where = f"{name}:{ln}"
        try:
            r = json.loads(line)
        except Exception as e:
            errors.append(f"{where}: does not parse: {e}")
            continue
        if set(r) != TOP:
            errors.append(f"{where}: keys {sorted(r)}")
        m = ID.match(str(r.get("id")))
        if not m:
            errors.append(f"{where}: id {r.get('id')} is not PREFIX-NNN")
        else:
            prefixes.add(m.group(1))
            number = int(m.group(2))
            if previous is not None and number != previous + 1:
                errors.append(f"{where}: id {r['id']} does not follow the line before")
            previous = number
            numbers.append(number)
        if r.get("style") != name:
            errors.append(f"{where}: style {r.get('style')} != {name}")
        if not isinstance(r.get("text"), str) or not r["text"].strip():
            errors.append(f"{where}: empty text")
        if not isinstance(r.get("notes"), str) or not r["notes"].strip():
            errors.append(f"{where}: empty notes")
        t = r.get("truth", {})
        if set(t) != TRUTH:
            errors.append(f"{where}: truth keys {sorted(t)}")
            continue
        if t["cancer_type"] is not None and t["cancer_type"] not in CANCER:
            errors.append(f"{where}: cancer_type {t['cancer_type']}")
        for k in ("stage", "stage_at_diagnosis"):
            if t[k] is not None and not STAGE.match(t[k]):
                errors.append(f"{where}: {k} {t[k]}")
        if t["stage_at_diagnosis"] is not None and t["stage_at_diagnosis"] == t["stage"]:
            errors.append(f"{where}: stage_at_diagnosis equals stage")
        if t["metastatic"] not in (True, False, None):
            errors.append(f"{where}: metastatic {t['metastatic']}")
        if t["stage"] and t["stage"].startswith("IV") and t["metastatic"] is False \
                and t["cancer_type"] not in ("head_and_neck", "prostate", "hepatocellular"):
            errors.append(f"{where}: stage IV but metastatic false (check)")
        if not isinstance(t["biomarkers"], dict):
            errors.append(f"{where}: biomarkers not a dict")
        else:
            for k, v in t["biomarkers"].items():
                if k not in MARKERS:
                    errors.append(f"{where}: marker {k}")
                if v not in MVALS:
                    errors.append(f"{where}: marker value {k}={v}")
        if t["surgery"] is not None and t["surgery"] not in SURG:
            errors.append(f"{where}: surgery {t['surgery']}")
        if not isinstance(t["prior_lines"], list):
            errors.append(f"{where}: prior_lines not a list")
        else:
            for pl in t["prior_lines"]:
                if set(pl) != {"regimen", "outcome"} or not isinstance(pl.get("regimen"), str) \
                        or not pl["regimen"].strip() or pl.get("outcome") not in OUTC:
                    errors.append(f"{where}: bad prior line {pl}")
        rows.append(r)

ids = [r["id"] for r in rows]
if len(ids) != len(set(ids)):
    errors.append("duplicate ids")
if len(prefixes) > 1:
    errors.append(f"more than one id prefix: {sorted(prefixes)}")
if sorted(numbers) != list(range(1, len(numbers) + 1)):
    errors.append("ids are not numbered 001.. without gaps")

def group(s):
    m = re.match(r"^(0|IV|III|II|I)", s)
    return m.group(1)

T = [r["truth"] for r in rows]
style = Counter(r["style"] for r in rows)
ct = Counter(t["cancer_type"] for t in T if t["cancer_type"])
st = Counter(group(t["stage"]) for t in T if t["stage"])
met = Counter(t["metastatic"] for t in T if t["metastatic"] is not None)
su = Counter(t["surgery"] for t in T if t["surgery"])
bmv = Counter(v for t in T for v in t["biomarkers"].values())
bmk = Counter(k for t in T for k in t["biomarkers"])
lo = Counter(pl["outcome"] for t in T for pl in t["prior_lines"])
n = len(T)

def fmt(c, order=None):
    items = sorted(c.items(), key=lambda kv: (-kv[1], str(kv[0]))) if order is None \
        else [(k, c[k]) for k in order if c.get(k)]
    return ", ".join(f"{k}: {v}" if order else f"{k} {v}" for k, v in items).replace("|", "\\|")

print(f"notes: {n}; per style: " + ", ".join(f"{k} {v}" for k, v in style.items()))
print()
print("| field | facts | breakdown |")
print("|---|---|---|")
print(f"| cancer_type | {sum(ct.values())} ({n - sum(ct.values())} null) | {fmt(ct)} |")
print(f"| stage | {sum(st.values())} ({n - sum(st.values())} null) | {fmt(st, ['0', 'I', 'II', 'III', 'IV'])} |")
print(f"| stage_at_diagnosis | {sum(1 for t in T if t['stage_at_diagnosis'])} | |")
print(f"| metastatic | {sum(met.values())} ({n - sum(met.values())} null) | true {met[True]}, false {met[False]} |")
print(f"| surgery | {sum(su.values())} ({n - sum(su.values())} null) | resected {su['resected']}, unresected {su['unresected']}, not_done {su['not_done']} |")
print(f"| biomarkers | {sum(bmv.values())} facts in {sum(1 for t in T if t['biomarkers'])} notes | "
      + ", ".join(f"{k} {bmv[k]}" for k in ("positive", "negative", "equivocal", "unknown") if bmv[k])
      + "; " + fmt(bmk) + " |")
print(f"| prior_lines | {sum(lo.values())} lines in {sum(1 for t in T if t['prior_lines'])} notes "
      f"({sum(1 for t in T if not t['prior_lines'])} notes with none) | "
      + ", ".join(f"{k} {lo[k]}" for k in ("progression", "ongoing", "response", "unknown") if lo[k]) + " |")
tl = [len(r["text"].splitlines()) for r in rows]
print()
print(f"note lengths: {min(tl)}-{max(tl)} lines")
if errors:
    print("\nERRORS:")
    for e in errors:
        print(" -", e)
    sys.exit(1)
print("\nOK: all checks passed")
