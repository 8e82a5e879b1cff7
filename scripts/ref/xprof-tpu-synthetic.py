"""XProf 2.24.2's outputs for oxprof's synthetic TPU profiles, per host and ALL_HOSTS.

Runs in the refkit venv (see scripts/gen/tpu-synthetic.sh); reuses the refkit's
xprof_convert.py for the exact parameters XProf's server passes (`base_params`) and its call
path (`convert_one`), for the tools these profiles exist for. For each run directory:
`OUT/<host>/<tool>.json` with that host's xplane alone (`host=<host>`), and
`OUT/ALL_HOSTS/<tool>.json` with every xplane (`host=ALL_HOSTS`) when there are several.

Usage: python scripts/ref/xprof-tpu-synthetic.py REFKIT_DIR RUN_DIR OUT_DIR
"""
import glob
import json
import os
import sys

TOOLS = ['perf_counters', 'utilization_viewer', 'megascale_stats', 'smart_suggestion']


def main():
  refkit, run_dir, out = sys.argv[1:4]
  sys.path.insert(0, refkit)
  import xprof_convert as xc  # pylint: disable=import-outside-toplevel
  xc._quiet_native_logs()  # pylint: disable=protected-access
  from xprof.convert import raw_to_tool_data as r2t  # pylint: disable=import-outside-toplevel
  xplanes = sorted(glob.glob(os.path.join(run_dir, '*.xplane.pb')))
  hosts = [os.path.basename(x)[:-len('.xplane.pb')] for x in xplanes]
  selections = [(h, [x]) for h, x in zip(hosts, xplanes)]
  if len(xplanes) > 1:
    selections.append(('ALL_HOSTS', xplanes))
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, 'tool_names.json'), 'w') as fh:
    json.dump(r2t.xspace_to_tool_names(xplanes), fh, indent=1)
  for host, paths in selections:
    os.makedirs(os.path.join(out, host), exist_ok=True)
    for tool in TOOLS:
      params = xc.base_params(host)
      try:
        data, _, _ = xc.convert_one(paths, tool, params)
      except Exception as e:  # pylint: disable=broad-except
        data = json.dumps({'xprof_error': str(e)[:500]})
        print(f'{host} {tool}: error {e}', file=sys.stderr)
      if data is None:
        continue
      if isinstance(data, bytes):
        data = data.decode('utf-8')
      with open(os.path.join(out, host, tool + '.json'), 'w') as fh:
        fh.write(data)
      print(f'{host} {tool}: {len(data)} bytes')


if __name__ == '__main__':
  main()
