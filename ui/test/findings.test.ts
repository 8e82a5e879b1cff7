// The overview pages show oxprof explain's findings, ranked as the server sends them.

import { describe, expect, it } from 'vitest';
import type { Explanation, Finding } from '../src/api';
import { findingsCard, findingsSummary, renderFindings } from '../src/components/findings';
import { context } from './helpers';

const inputBound: Finding = {
      id: 'input_bound',
      title: 'Steps wait for input',
      severity: 'critical',
      time_at_stake_ms: 24.6,
      percent_of_step: 92.2,
      evidence: ['24.61 ms of the 26.70 ms step is input (92.2%)'],
      suggestion: 'overlap input with compute',
  see: 'oxprof data input_pipeline_analyzer PATH --format md',
};

const explanation: Explanation = { schema: 'oxprof.explain/1', bound_by: 'input', checked: ['host_bound'], findings: [inputBound] };

describe('findings', () => {
  it('lists each finding with its evidence and next step', () => {
    const el = renderFindings(explanation);
    const item = el.querySelector('[data-finding="input_bound"]');
    expect(item?.textContent).toContain('Steps wait for input (critical): 24.60 ms per step, 92.2%');
    expect(item?.textContent).toContain('24.61 ms of the 26.70 ms step is input');
    expect(item?.textContent).toContain('Next: overlap input with compute');
  });

  it('sums up in one line', () => {
    const second: Finding = { ...inputBound, id: 'host_bound' };
    expect(findingsSummary({ ...explanation, findings: [inputBound, second] })).toBe(
      'Steps wait for input (critical, 92% of the step) and 1 more',
    );
    expect(findingsSummary({ ...explanation, findings: [] })).toBe('Nothing found');
  });

  it('says what was checked when nothing was found', () => {
    const el = renderFindings({ ...explanation, findings: [] });
    expect(el.textContent).toBe('Nothing found: checked host_bound.');
  });

  it('fills the card when the server answers, for the page run and host', async () => {
    const ctx = context('overview_page', null);
    const asked: string[] = [];
    ctx.api = { ...ctx.api, explain: async (run, host) => (asked.push(`${run}/${host}`), explanation) };
    const card = findingsCard(ctx);
    expect(card?.textContent).toContain('Looking for bottlenecks');
    await new Promise((r) => setTimeout(r, 0));
    expect(card?.dataset.state).toBe('ready');
    expect(card?.querySelector('[data-role="findings-summary"]')?.textContent).toBe('Steps wait for input (critical, 92% of the step)');
    expect(card?.querySelector('details [data-finding="input_bound"]')).not.toBeNull();
    expect(asked).toEqual([`${ctx.state.run}/${ctx.state.host}`]);
  });
});
