// Light and dark themes: the system's preference (`prefers-color-scheme`) unless the
// header's toggle picks one (remembered in localStorage). The theme is `data-theme` on
// <html>, which the CSS variables and the charts read.

import { h } from './dom';

export type ThemeChoice = 'auto' | 'light' | 'dark';
const KEY = 'oxprof.theme';
const LABELS: Record<ThemeChoice, string> = { auto: '◐ Auto', light: '☀ Light', dark: '☾ Dark' };
const NEXT: Record<ThemeChoice, ThemeChoice> = { auto: 'light', light: 'dark', dark: 'auto' };

/** The theme in effect: 'dark' or 'light'. */
export function currentTheme(): 'light' | 'dark' {
  return document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light';
}

function systemDark(): boolean {
  return typeof window.matchMedia === 'function' && window.matchMedia('(prefers-color-scheme: dark)').matches;
}

function storedChoice(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : 'auto';
  } catch {
    return 'auto';
  }
}

/** Applies a choice to <html data-theme>. */
export function applyTheme(choice: ThemeChoice): void {
  document.documentElement.dataset.theme = choice === 'auto' ? (systemDark() ? 'dark' : 'light') : choice;
  document.documentElement.dataset.themeChoice = choice;
}

export class ThemeToggle {
  readonly button: HTMLButtonElement;
  private choice: ThemeChoice = storedChoice();

  constructor(private readonly changed: () => void) {
    this.button = h('button', { type: 'button', class: 'button theme-toggle', 'data-role': 'theme', onclick: () => this.cycle() });
    applyTheme(this.choice);
    this.label();
    if (typeof window.matchMedia === 'function') {
      window.matchMedia('(prefers-color-scheme: dark)').addEventListener?.('change', () => {
        if (this.choice !== 'auto') return;
        applyTheme('auto');
        this.changed();
      });
    }
  }

  private label(): void {
    this.button.textContent = LABELS[this.choice];
    this.button.title = `Theme: ${this.choice === 'auto' ? `the system's (${currentTheme()})` : this.choice}. Click for ${NEXT[this.choice]}.`;
    this.button.setAttribute('aria-label', `Theme: ${this.choice}`);
  }

  private cycle(): void {
    this.choice = NEXT[this.choice];
    try {
      if (this.choice === 'auto') localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, this.choice);
    } catch {
      // Private mode: for this page only.
    }
    const before = currentTheme();
    applyTheme(this.choice);
    this.label();
    if (currentTheme() !== before) this.changed();
  }
}
