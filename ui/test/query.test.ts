import { describe, expect, it } from 'vitest';
import { answerTable, chartOption, type QueryAnswer } from '../src/pages/query';

const answer: QueryAnswer = {
  columns: [
    { name: 'name', type: 'text' },
    { name: 'n', type: 'number' },
    { name: 'ok', type: 'boolean' },
  ],
  rows: [
    ['a', 3, true],
    ['b', 1, false],
  ],
  row_count: 2,
  truncated: false,
  elapsed_ms: 1.5,
};

describe('SQL query page', () => {
  it('shows an answer as a DataTable with typed columns', () => {
    const t = answerTable(answer);
    expect(t.cols?.map((c) => c.type)).toEqual(['string', 'number', 'boolean']);
    expect(t.rows?.[1]?.c.map((c) => c?.v)).toEqual(['b', 1, false]);
  });
  it('charts a number column against a label column', () => {
    const o = chartOption(answer, 0, 1, 'line') as { xAxis: { data: string[] }; series: { type: string; data: number[] }[] };
    expect(o.xAxis.data).toEqual(['a', 'b']);
    expect(o.series[0]).toMatchObject({ type: 'line', data: [3, 1] });
  });
});
