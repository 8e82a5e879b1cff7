// The shell finds a tool's page by the registry's `page` column, not by the tool's name.

import { describe, expect, it } from 'vitest';
import { learnToolTitles, pageIdOf } from '../src/page';
import { pageFor, toolNeedsNoData } from '../src/pages';
import { genericPage, rawDataPage } from '../src/pages/generic';
import { kernelStatsPage } from '../src/pages/kernel_stats';

describe('pageFor', () => {
  it('opens the page the registry names for a tool', () => {
    expect(pageFor('a_tool_added_later')).toBe(genericPage);
    learnToolTitles([{ name: 'a_tool_added_later', title: 'A tool added later', page: 'kernel_stats' }]);
    expect(pageIdOf('a_tool_added_later')).toBe('kernel_stats');
    expect(pageFor('a_tool_added_later')).toBe(kernelStatsPage);
  });
  it('opens the download page for a tool with a binary body, without fetching it', () => {
    expect(toolNeedsNoData('a_binary_tool')).toBe(false);
    learnToolTitles([{ name: 'a_binary_tool', title: 'A binary tool', page: 'raw' }]);
    expect(pageFor('a_binary_tool')).toBe(rawDataPage);
    expect(toolNeedsNoData('a_binary_tool')).toBe(true);
  });
});
