// The generic page for tools without a dedicated page yet: every DataTable of the response
// as a sortable, filterable, exportable table with its properties; other JSON as text.

import { card } from '../components/common';
import { renderProperties, renderTable } from '../components/table';
import { asTables } from '../datatable';
import { append, h } from '../dom';
import { type PageContext, toolName } from '../page';
import { buildUrl, PROFILE_PREFIX } from '../api';

const MAX_JSON_CHARS = 200_000;

export function genericPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page generic', 'data-page': 'generic' });
  const tables = asTables(ctx.data);
  page.append(
    h(
      'p',
      { class: 'muted' },
      `${toolName(ctx.state.tool)} has no dedicated page yet; its data is shown ${tables.length ? 'as tables' : 'as JSON'}. `,
      h('a', { href: rawUrl(ctx), target: '_blank', rel: 'noopener' }, 'Raw data'),
    ),
  );
  if (tables.length) {
    tables.forEach((table, i) => {
      const props = Object.entries(table.p ?? {});
      append(page, [
        props.length ? card(`Table ${i + 1}: properties`, renderProperties(props, `table-${i}`)) : null,
        renderTable(
          table,
          { key: tables.length === 1 ? 't' : `t${i}`, title: tables.length === 1 ? toolName(ctx.state.tool) : `Table ${i + 1}`, csvName: `${ctx.state.tool}_${i + 1}` },
          ctx.view,
        ),
      ]);
    });
    return page;
  }
  let text = JSON.stringify(ctx.data, null, 2) ?? '';
  const cut = text.length > MAX_JSON_CHARS;
  if (cut) text = text.slice(0, MAX_JSON_CHARS);
  page.append(card('Data (JSON)', cut ? h('p', { class: 'muted' }, `First ${MAX_JSON_CHARS} characters shown.`) : null, h('pre', { class: 'json', 'data-role': 'json' }, text)));
  return page;
}

/** Tools whose output is not tables (trace events, graphs, per-module memory): a link to the raw data. */
export function noDataPage(ctx: PageContext): HTMLElement {
  return h(
    'div',
    { class: 'page no-data', 'data-page': 'no-data' },
    card(
      toolName(ctx.state.tool),
      h('p', null, `oxprof's page for ${toolName(ctx.state.tool)} is not built yet. The data is served at XProf's route, for XProf's own frontend or scripts:`),
      h('p', null, h('a', { href: rawUrl(ctx), target: '_blank', rel: 'noopener', 'data-role': 'raw-link' }, rawUrl(ctx))),
    ),
  );
}

/** Tools answering a binary body (the registry's `raw` page): the body, downloaded. */
export function rawDataPage(ctx: PageContext): HTMLElement {
  return h(
    'div',
    { class: 'page raw-data', 'data-page': 'raw' },
    card(
      toolName(ctx.state.tool),
      h('p', null, `${toolName(ctx.state.tool)} answers binary data, which this page does not draw. Download it:`),
      h('p', null, h('a', { href: rawUrl(ctx), download: `${ctx.state.tool}.bin`, 'data-role': 'raw-link' }, rawUrl(ctx))),
    ),
  );
}

function rawUrl(ctx: PageContext): string {
  return buildUrl(`${PROFILE_PREFIX}/data`, { run: ctx.state.run, tag: ctx.state.tool, host: ctx.state.host });
}
