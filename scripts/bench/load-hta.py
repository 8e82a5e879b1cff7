"""Loads one PyTorch trace with HTA's trace loader (PyPI traceinsight 0.6.1), in this
process, for scripts/bench/kineto-loaders.sh: `parse_trace_dataframe` with HTA's default
parser configuration (what `TraceAnalysis` does per rank file)."""
import sys

from hta.common.trace_parser import parse_trace_dataframe
from hta.configs.parser_config import ParserConfig

meta, df, symbols = parse_trace_dataframe(sys.argv[1], ParserConfig.get_default_cfg())
print("hta events:", len(df))
