"""XProf 2.24.2's Perfetto trace of each host's DCN collectives (`megascale_stats` with
`perfetto=true`) for oxprof's synthetic megascale runs.

Runs in the refkit venv (see scripts/gen/tpu-synthetic.sh), through the refkit's
xprof_convert.py call path with the parameters XProf's server passes (`perfetto=True`).
For each host: `OUT/<host>/megascale_stats.perfetto.gz`, XProf's bytes as they are (XProf
already gzips the trace; its HTTP layer gzips it once more as Content-Encoding). For
`host=ALL_HOSTS` XProf 2.24.2 combines the hosts' DCN slack tables and ignores `perfetto`,
answering the JSON table under `application/octet-stream`: recorded as
`OUT/ALL_HOSTS/megascale_stats.perfetto.json`.

Usage: python scripts/ref/xprof-tpu-perfetto.py REFKIT_DIR RUN_DIR OUT_DIR
"""
import glob
import os
import sys


def main():
  refkit, run_dir, out = sys.argv[1:4]
  sys.path.insert(0, refkit)
  import xprof_convert as xc  # pylint: disable=import-outside-toplevel
  xc._quiet_native_logs()  # pylint: disable=protected-access
  xplanes = sorted(glob.glob(os.path.join(run_dir, '*.xplane.pb')))
  hosts = [os.path.basename(x)[:-len('.xplane.pb')] for x in xplanes]
  selections = [(h, [x]) for h, x in zip(hosts, xplanes)]
  if len(xplanes) > 1:
    selections.append(('ALL_HOSTS', xplanes))
  for host, paths in selections:
    os.makedirs(os.path.join(out, host), exist_ok=True)
    params = xc.base_params(host)
    params['perfetto'] = True
    data, content_type, _ = xc.convert_one(paths, 'megascale_stats', params)
    if data is None:
      with open(os.path.join(out, host, 'megascale_stats.perfetto.none'), 'w') as fh:
        fh.write('XProf 2.24.2 answers no data (HTTP 404 "No Data")\n')
      print(f'{host} megascale_stats perfetto: no data')
      continue
    assert content_type == 'application/octet-stream', content_type
    if isinstance(data, str):
      data = data.encode('utf-8')
    name = 'megascale_stats.perfetto.' + ('gz' if data[:2] == b'\x1f\x8b' else 'json')
    with open(os.path.join(out, host, name), 'wb') as fh:
      fh.write(data)
    print(f'{host} megascale_stats perfetto: {len(data)} bytes')


if __name__ == '__main__':
  main()
