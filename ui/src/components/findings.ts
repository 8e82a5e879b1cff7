// "What bounds this run": oxprof explain's findings (ranked, with evidence and the next
// step) atop the overview pages. The card is one line until its owner opens it, and its
// answer arrives into that line: nothing below it moves when the server answers.

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

/** The findings of `explanation` as a list (or what was checked, when nothing was found). */
export function renderFindings(explanation: Explanation): HTMLElement {
  if (!explanation.findings.length) {
    return h('p', { class: 'muted', 'data-role': 'no-findings' }, `Nothing found: checked ${explanation.checked.join(', ')}.`);
  }
  return h('ol', { class: 'findings', 'data-role': 'findings' }, explanation.findings.map(findingItem));
}

/** The one-line summary of `explanation`. */
export function findingsSummary(explanation: Explanation): string {
  const [first, ...rest] = explanation.findings;
  if (!first) return 'Nothing found';
  const more = rest.length ? ` and ${rest.length} more` : '';
  return `${first.title} (${first.severity}, ${first.percent_of_step.toFixed(0)}% of the step)${more}`;
}

/** A card that shows the run's findings once `/oxprof/api/explain` answers (nothing when the API has no explain). */
export function findingsCard(ctx: PageContext): HTMLElement | null {
  const explain = ctx.api.explain;
  if (!explain) return null;
  const summary = h('span', { 'data-role': 'findings-summary' }, 'Looking for bottlenecks…');
  const details = h('details', { 'data-role': 'findings-details' }, h('summary', null, h('strong', null, 'What bounds this run: '), summary));
  const section = h('section', { class: 'card findings-card', 'data-role': 'explain' }, details);
  explain(ctx.state.run, ctx.state.host)
    .then((explanation) => {
      summary.textContent = findingsSummary(explanation);
      section.dataset.state = 'ready';
      details.append(renderFindings(explanation));
    })
    .catch((e: unknown) => {
      summary.textContent = `not explained (${e instanceof Error ? e.message : String(e)})`;
      section.dataset.state = 'error';
    });
  return section;
}
