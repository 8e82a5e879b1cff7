import { describe, expect, it } from 'vitest';
import { errorMessage, buildUrl, parseNotes } from '../src/api';
import { formatState, parseState, toolLink } from '../src/state';

describe('URL state', () => {
  it('round-trips run, tool, host and view keys', () => {
    const s = parseState('?run=2024_01_01&tool=framework_op_stats&host=h1&ops.sort=total_self_time.desc&idle=yes');
    expect(s).toEqual({ run: '2024_01_01', tool: 'framework_op_stats', host: 'h1', view: { 'ops.sort': 'total_self_time.desc', idle: 'yes' } });
    expect(formatState(s)).toBe('?run=2024_01_01&tool=framework_op_stats&host=h1&idle=yes&ops.sort=total_self_time.desc');
    expect(parseState(formatState(s))).toEqual(s);
  });
  it('encodes special characters', () => {
    const s = { run: 'a b&c', tool: 'trace_viewer@', host: 'x/y', view: { q: '' } };
    expect(parseState(formatState(s))).toEqual({ ...s, view: {} });
  });
  it('links to another tool keeping run and host but not the view', () => {
    expect(toolLink({ run: 'r', tool: 'overview_page', host: 'h', view: { step: '2' } }, 'trace_viewer')).toBe('?run=r&tool=trace_viewer&host=h');
  });
});

describe('API helpers', () => {
  it('shows the server JSON error message', () => {
    expect(errorMessage('{"error": "no host named \\"x\\"", "status": 404}', 404, 'Not Found')).toBe('no host named "x"');
    expect(errorMessage('plain text failure', 500, 'Internal')).toBe('plain text failure');
    expect(errorMessage('<html>oops</html>', 502, 'Bad Gateway')).toBe('502 Bad Gateway');
  });
  it('builds URLs without empty parameters', () => {
    expect(buildUrl('/data', { run: 'r', tag: 'overview_page', host: '' })).toBe('/data?run=r&tag=overview_page');
  });
  it('parses notes', () => {
    expect(parseNotes({ notes: ['a', '', 3, 'b'] })).toEqual(['a', 'b']);
    expect(parseNotes(['x'])).toEqual(['x']);
    expect(parseNotes(null)).toEqual([]);
  });
});
