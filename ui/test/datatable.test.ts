import { describe, expect, it } from 'vitest';
import {
  type DataTable,
  asTables,
  compareValues,
  findTableWithColumn,
  formatNumber,
  formatValue,
  parseCsv,
  rowMatches,
  sortedOrder,
  toCsv,
} from '../src/datatable';
import { fixture } from './helpers';

describe('sorting', () => {
  const values = [
    [1, 'b'],
    [null, 'a'],
    [3, 'c'],
    [1, 'a'],
  ];
  it('sorts numbers ascending with nulls last and stable ties', () => {
    expect(sortedOrder(values, 0, 'asc')).toEqual([0, 3, 2, 1]);
  });
  it('sorts numbers descending with nulls still last and ties in original order', () => {
    expect(sortedOrder(values, 0, 'desc')).toEqual([2, 0, 3, 1]);
  });
  it('sorts strings by code point', () => {
    expect(sortedOrder(values, 1, 'asc')).toEqual([1, 3, 0, 2]);
  });
  it('compares mixed values deterministically', () => {
    expect(compareValues(2, 10)).toBeLessThan(0);
    expect(compareValues('10', '2')).toBeLessThan(0);
    expect(compareValues(null, 1)).toBeGreaterThan(0);
  });
});

describe('filtering', () => {
  it('matches a case-insensitive substring in the chosen columns only', () => {
    expect(rowMatches(['MatMul', 'Host'], [0], 'matm')).toBe(true);
    expect(rowMatches(['MatMul', 'Host'], [0], 'host')).toBe(false);
    expect(rowMatches(['MatMul', 'Host'], [0], '  ')).toBe(true);
  });
});

describe('formatting', () => {
  it('formats numbers with separators and at most 3 decimals', () => {
    expect(formatNumber(1234567.8912, 3)).toBe('1,234,567.891');
    expect(formatNumber(2, 3)).toBe('2');
    expect(formatNumber(-0.0001, 3)).toBe('0');
    expect(formatValue(0.5262042475226412, 'fraction-percent')).toBe('52.62%');
    expect(formatValue(true)).toBe('yes');
    expect(formatValue(null)).toBe('');
  });
});

describe('CSV', () => {
  it('quotes every field like XProf and round-trips', () => {
    const csv = toCsv(
      [
        { id: 'a', label: 'Name' },
        { id: 'b', label: 'Time (us)' },
      ],
      [
        ['say "hi", twice', 1.5],
        [null, 2],
      ],
    );
    expect(csv).toBe('"Name","Time (us)"\r\n"say ""hi"", twice","1.5"\r\n"","2"\r\n');
    expect(parseCsv(csv)).toEqual([
      ['Name', 'Time (us)'],
      ['say "hi", twice', '1.5'],
      ['', '2'],
    ]);
  });
});

describe('XProf responses', () => {
  it('finds the overview tables by column id', () => {
    const data = fixture('overview_page.tf_custom_loop.json');
    expect(findTableWithColumn(data, 'stepnum')?.p?.steptime_ms_average).toBe('26.7');
    expect(findTableWithColumn(data, 'tip_type')?.rows?.length).toBe(7);
    expect(findTableWithColumn(data, 'nope')).toBeNull();
  });
  it('accepts one table or a list of tables', () => {
    expect(asTables(fixture('kernel_stats.gpu_multi_worker.json'))).toHaveLength(1);
    expect(asTables(fixture('framework_op_stats.tf_custom_loop.json'))).toHaveLength(2);
    expect(asTables({ podStatsSequence: {} })).toHaveLength(0);
    const t: DataTable = { cols: [] };
    expect(asTables([t, null, 3])).toEqual([t]);
  });
});
