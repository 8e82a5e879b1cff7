import { describe, expect, it } from 'vitest';
import { suggestionBody, suggestionsOf } from '../src/pages/counters';

describe('smart suggestions', () => {
  it('reads the suggestions of XProf’s report, none when absent', () => {
    expect(suggestionsOf({ suggestions: [{ ruleName: 'BarrierCoresRule', suggestionText: '<p>x</p>' }] })).toHaveLength(1);
    expect(suggestionsOf({ suggestions: [] })).toEqual([]);
    expect(suggestionsOf(null)).toEqual([]);
  });

  it('keeps XProf’s p/ul/li/b markup and shows anything else as text', () => {
    const body = suggestionBody('<p>Bound by <b>TPU barrier-cores</b></p><ul><li>Check <i>network</i></li></ul><img src=x onerror=alert(1)><script>alert(2)</script>');
    expect(body.querySelector('p b')?.textContent).toBe('TPU barrier-cores');
    expect(body.querySelector('ul li')?.textContent).toBe('Check network');
    expect(body.querySelector('img, script, i')).toBeNull();
  });
});
