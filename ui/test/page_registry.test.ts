// The shell finds a tool's page by the registry's `page` column, not by the tool's name.

import { describe, expect, it } from 'vitest';
import { learnToolTitles, pageIdOf } from '../src/page';
import { pageFor } from '../src/pages';
import { genericPage } from '../src/pages/generic';
import { kernelStatsPage } from '../src/pages/kernel_stats';

describe('pageFor', () => {
  it('opens the page the registry names for a tool', () => {
    expect(pageFor('a_tool_added_later')).toBe(genericPage);
    learnToolTitles([{ name: 'a_tool_added_later', title: 'A tool added later', page: 'kernel_stats' }]);
    expect(pageIdOf('a_tool_added_later')).toBe('kernel_stats');
    expect(pageFor('a_tool_added_later')).toBe(kernelStatsPage);
  });
});
