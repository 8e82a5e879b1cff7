import { describe, expect, it } from 'vitest';
import { hostPicker } from '../src/trace/widgets';

const pod = Array.from({ length: 256 }, (_, i) => `tpu-pod-host-${String(i).padStart(3, '0')}`);

function picker(shown: string[], max: number) {
  const applied: string[][] = [];
  const el = hostPicker(pod, shown, max, (chosen) => applied.push(chosen));
  const q = <T extends Element>(role: string) => el.querySelector(`[data-role="${role}"]`) as T;
  const filter = q<HTMLInputElement>('hosts-filter');
  const type = (text: string) => {
    filter.value = text;
    filter.dispatchEvent(new Event('input'));
  };
  const listed = () => [...el.querySelectorAll<HTMLLabelElement>('.trace-host-choice')].filter((l) => !l.hidden).length;
  return { el, q, type, listed, applied };
}

describe('the hosts picker of a 256-host pod', () => {
  it('filters by name, chooses what it lists and applies it', () => {
    const p = picker(pod.slice(0, 1), 16);
    expect(p.listed()).toBe(256);
    expect(p.q('hosts-count').textContent).toBe('1 chosen · 256 of 256 listed');
    p.type('HOST-01');
    // tpu-pod-host-010 … 019 (names are matched without case).
    expect(p.listed()).toBe(10);
    p.q<HTMLButtonElement>('hosts-choose-listed').click();
    expect(p.q('hosts-count').textContent).toBe('11 chosen · 10 of 256 listed');
    p.q<HTMLButtonElement>('hosts-apply').click();
    expect(p.applied).toEqual([[...pod.slice(0, 1), ...pod.slice(10, 20)]]);
  });

  it('refuses more hosts than one timeline shows, and says how many fewer', () => {
    const p = picker([], 16);
    p.type('host-0');
    // 000 … 099: 100 hosts listed.
    expect(p.listed()).toBe(100);
    p.q<HTMLButtonElement>('hosts-choose-listed').click();
    const apply = p.q<HTMLButtonElement>('hosts-apply');
    expect(apply.disabled).toBe(true);
    expect(p.q('hosts-status').textContent).toBe('One timeline shows at most 16 hosts: choose 84 fewer.');
    apply.click();
    expect(p.applied).toEqual([]);
    p.q<HTMLButtonElement>('hosts-choose-none').click();
    p.type('host-00');
    p.q<HTMLButtonElement>('hosts-choose-listed').click();
    expect(apply.disabled).toBe(false);
    apply.click();
    expect(p.applied).toEqual([pod.slice(0, 10)]);
  });

  it('asks for a host when none is chosen', () => {
    const p = picker([], 0);
    p.q<HTMLButtonElement>('hosts-apply').click();
    expect(p.applied).toEqual([]);
    expect(p.q('hosts-status').textContent).toBe('Choose at least one host.');
  });
});
