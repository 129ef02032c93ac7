#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
#
# The Grafana dashboard (etc/grafana/daqiri.json) drawn as one PNG from a
# real Prometheus: every panel's queries run as Grafana runs them
# (query_range, $stream as every stream), one plot per panel, in the
# dashboard's order. For the README's picture and for a quick look where
# no Grafana runs; the numbers are whatever that Prometheus scraped.
#
#   scripts/dashboard-png.py --prometheus http://127.0.0.1:9090 \
#       --minutes 5 -o dashboard.png
#
# Debian's python3 with python3-matplotlib (scripts/install-deps.sh).
import argparse
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def query_range(url, expr, start, end, step):
    q = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{q}", timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body.get('error', body)}")
    return body["data"]["result"]


def label(metric, legend):
    """The series' name: the target's legendFormat filled in, else its labels."""
    if legend:
        out = re.sub(r"\{\{(\w+)\}\}", lambda m: metric.get(m.group(1), ""), legend)
        return " ".join(out.split()) or "value"
    return ",".join(f"{k}={v}" for k, v in sorted(metric.items()) if k != "__name__") or "value"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--prometheus", required=True, help="base URL, e.g. http://127.0.0.1:9090")
    ap.add_argument("--dashboard", default="etc/grafana/daqiri.json")
    ap.add_argument("--minutes", type=float, default=5, help="the range drawn, up to now")
    ap.add_argument("--step", type=float, default=0, help="seconds between points (0: range/120)")
    ap.add_argument("-o", "--output", required=True, help="the PNG to write")
    a = ap.parse_args()

    with open(a.dashboard) as f:
        dash = json.load(f)
    panels = [p for p in dash["panels"] if p.get("targets")]
    end = time.time()
    start = end - a.minutes * 60
    step = a.step or max(1.0, (end - start) / 120)
    cols = 3
    rows = math.ceil(len(panels) / cols)
    plt.style.use("dark_background")
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.2 * rows), squeeze=False)
    fig.suptitle(f"{dash.get('title', 'daqiri')}: the last {a.minutes:g} min, "
                 f"drawn from Prometheus' data", fontsize=14)
    nseries = 0
    for ax, p in zip(axes.flat, panels):
        ax.set_title(p["title"], fontsize=10, loc="left")
        drawn = 0
        for t in p["targets"]:
            expr = t["expr"].replace("$stream", ".*")
            for s in query_range(a.prometheus, expr, start, end, step):
                if drawn == 8:
                    break
                xs = [float(v[0]) - end for v in s["values"]]
                ys = [float(v[1]) for v in s["values"]]
                ax.plot(xs, ys, linewidth=1.2, label=label(s["metric"], t.get("legendFormat")))
                drawn += 1
        nseries += drawn
        if drawn:
            ax.legend(fontsize=7, loc="upper left")
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit", "")
        ax.set_xlabel("seconds before now" + (f"   [{unit}]" if unit else ""), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.25)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(a.output, dpi=80)
    print(f"dashboard-png: {len(panels)} panels, {nseries} series -> {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
