#!/usr/bin/env python3
"""Validate the notes-heldout2 hand-written gold set (format + allowed values)."""
import json, re, sys, glob, os
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
STYLES = ["nurse_navigator", "chemo_order_check", "palliative_consult", "dictation",
          "soap", "prior_auth", "ehr_summary", "radonc_consult"]
CANCERS = {"breast", "nsclc", "sclc", "colorectal", "pancreatic", "gastric", "esophageal", "melanoma",
           "prostate", "ovarian", "endometrial", "cervical", "head_and_neck", "bladder", "renal",
           "hepatocellular", "cholangiocarcinoma", "lymphoma", "sarcoma", "glioma", "gastric|esophageal"}
STAGE = re.compile(r"^(0|I|II|III|IV)([ABCD][0-9]?)?$")
MARKERS = {"HER2", "ER", "PR", "PD-L1", "EGFR", "ALK", "ROS1", "KRAS", "NRAS", "BRAF", "MSI", "BRCA", "NTRK",
           "MET", "RET", "TMB", "HRD", "HPV", "IDH", "MGMT", "PIK3CA", "ESR1", "KIT", "PDGFRA", "FGFR2", "FGFR3"}
MVALS = {"positive", "negative", "equivocal", "unknown"}
SURG = {"resected", "unresected", "not_done", None}
OUTC = {"progression", "response", "ongoing", "unknown"}
TKEYS = {"cancer_type", "stage", "stage_at_diagnosis", "metastatic", "biomarkers", "surgery", "prior_lines"}

def main():
    errs, recs = [], []
    for s in STYLES:
        p = os.path.join(HERE, s + ".jsonl")
        if not os.path.exists(p):
            errs.append(f"missing {p}"); continue
        for ln, line in enumerate(open(p, encoding="utf-8"), 1):
            if not line.strip():
                errs.append(f"{s}:{ln} blank line"); continue
            try:
                r = json.loads(line)
            except Exception as e:
                errs.append(f"{s}:{ln} bad json {e}"); continue
            recs.append((s, ln, r))
    ids = []
    for s, ln, r in recs:
        w = f"{s}:{ln}"
        if set(r) != {"id", "style", "text", "truth", "notes"}: errs.append(f"{w} keys {sorted(r)}")
        if r.get("style") != s: errs.append(f"{w} style mismatch")
        if not isinstance(r.get("text"), str) or not r["text"].strip(): errs.append(f"{w} empty text")
        if not isinstance(r.get("notes"), str) or not r["notes"].strip(): errs.append(f"{w} empty notes")
        ids.append(r.get("id"))
        t = r.get("truth", {})
        if set(t) != TKEYS: errs.append(f"{w} truth keys {sorted(t)}"); continue
        if t["cancer_type"] is not None and t["cancer_type"] not in CANCERS: errs.append(f"{w} cancer_type {t['cancer_type']}")
        for k in ("stage", "stage_at_diagnosis"):
            if t[k] is not None and not STAGE.match(t[k]): errs.append(f"{w} {k} {t[k]}")
        if t["stage"] is not None and t["stage_at_diagnosis"] == t["stage"]: errs.append(f"{w} stage_at_diagnosis equals stage")
        if t["metastatic"] not in (True, False, None): errs.append(f"{w} metastatic {t['metastatic']}")
        if t["stage"] and t["stage"].startswith("IV") and t["metastatic"] is False and t["cancer_type"] not in ("head_and_neck",):
            errs.append(f"{w} stage IV but metastatic false")
        if not isinstance(t["biomarkers"], dict): errs.append(f"{w} biomarkers not dict")
        else:
            for k, v in t["biomarkers"].items():
                if k not in MARKERS: errs.append(f"{w} marker {k}")
                if v not in MVALS: errs.append(f"{w} marker value {k}={v}")
        if t["surgery"] not in SURG: errs.append(f"{w} surgery {t['surgery']}")
        if not isinstance(t["prior_lines"], list): errs.append(f"{w} prior_lines not list")
        else:
            for pl in t["prior_lines"]:
                if set(pl) != {"regimen", "outcome"} or not pl["regimen"].strip() or pl["outcome"] not in OUTC:
                    errs.append(f"{w} bad line {pl}")
    exp = [f"H2NOTE-{i:03d}" for i in range(1, len(ids) + 1)]
    if ids != exp: errs.append("ids not unique/in order")
    if len(ids) != 120: errs.append(f"expected 120 notes, got {len(ids)}")
    if errs:
        print("\n".join(errs)); sys.exit(1)
    # counts
    print(f"OK: {len(recs)} notes")
    print("per style:", dict(Counter(s for s, _, _ in recs)))
    T = [r["truth"] for _, _, r in recs]
    def nn(k): return sum(1 for t in T if t[k] is not None)
    print("cancer_type:", dict(sorted(Counter(t["cancer_type"] for t in T).items(), key=lambda x: str(x[0]))))
    print("stage non-null:", nn("stage"), "| stage groups:", dict(Counter((t["stage"] or "null").rstrip("ABCD0123456789") or t["stage"] for t in T)))
    print("stage_at_diagnosis non-null:", nn("stage_at_diagnosis"))
    print("metastatic:", dict(Counter(str(t["metastatic"]) for t in T)))
    print("surgery:", dict(Counter(str(t["surgery"]) for t in T)))
    bm = Counter(k for t in T for k in t["biomarkers"]); bv = Counter(v for t in T for v in t["biomarkers"].values())
    print("notes with >=1 biomarker:", sum(1 for t in T if t["biomarkers"]), "| biomarker facts:", sum(bm.values()))
    print("biomarker keys:", dict(bm.most_common())); print("biomarker values:", dict(bv))
    pl = [l for t in T for l in t["prior_lines"]]
    print("notes with >=1 prior line:", sum(1 for t in T if t["prior_lines"]), "| prior lines:", len(pl), "| outcomes:", dict(Counter(l["outcome"] for l in pl)))

if __name__ == "__main__":
    main()
