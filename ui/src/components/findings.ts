// "What bounds this run": oxprof explain's findings (ranked, with evidence and the next
// step) atop the overview pages, filled in when the server's answer arrives.

import type { Explanation, Finding } from '../api';
import { h } from '../dom';
import type { PageContext } from '../page';

function findingItem(f: Finding): HTMLElement {
  return h(
    'li',
    { class: `finding finding-${f.severity}`, 'data-finding': f.id },
    h('strong', null, f.title),
    ` (${f.severity}): ${f.time_at_stake_ms.toFixed(2)} ms per step, ${f.percent_of_step.toFixed(1)}%`,
    h('ul', null, f.evidence.map((e) => h('li', null, e))),
    h('p', null, h('em', null, 'Next: '), f.suggestion),
  );
}

/** The findings of `explanation` as a card's body. */
export function renderFindings(explanation: Explanation): HTMLElement {
  if (!explanation.findings.length) {
    return h('p', { class: 'muted', 'data-role': 'no-findings' }, `Nothing found: checked ${explanation.checked.join(', ')}.`);
  }
  return h('ol', { class: 'findings', 'data-role': 'findings' }, explanation.findings.map(findingItem));
}

/** A card that shows the run's findings once `/oxprof/api/explain` answers (nothing when the API has no explain). */
export function findingsCard(ctx: PageContext): HTMLElement | null {
  const explain = ctx.api.explain;
  if (!explain) return null;
  const body = h('div', { 'data-role': 'findings-body' }, h('p', { class: 'muted' }, 'Looking for bottlenecks…'));
  const section = h('section', { class: 'card', 'data-role': 'explain' }, h('h2', null, 'What bounds this run'), body);
  explain(ctx.state.run, ctx.state.host)
    .then((explanation) => body.replaceChildren(renderFindings(explanation)))
    .catch((e: unknown) => body.replaceChildren(h('p', { class: 'muted' }, `Not explained: ${e instanceof Error ? e.message : String(e)}`)));
  return section;
}
