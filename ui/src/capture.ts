// The Capture Profile dialog: asks the server (`/data/plugin/profile/capture_profile`, XProf's
// parameters) to capture a profile from running programs' profiler servers into the served
// log directory, shows progress while it waits, then the result or the error (and which
// workers failed). Every server string is set as text (no innerHTML).

import type { CaptureReply, Params } from './api';
import { h, replaceChildren } from './dom';

/** The form's values. */
export interface CaptureForm {
  /** Comma-separated `host:port` list. */
  serviceAddr: string;
  durationMs: number;
  numRetry: number;
  hostTracerLevel: number;
  deviceTracerLevel: number;
  pythonTracerLevel: number;
}

export const CAPTURE_DEFAULTS: CaptureForm = {
  serviceAddr: '',
  durationMs: 2000,
  numRetry: 3,
  hostTracerLevel: 2,
  deviceTracerLevel: 1,
  pythonTracerLevel: 0,
};

/** The addresses of a comma-separated list (blanks and empty entries dropped). */
export function parseAddresses(list: string): string[] {
  return list
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a.length > 0);
}

/** Checks the form; the message to show, or null when it can be sent. */
export function validateCapture(form: CaptureForm): string | null {
  if (parseAddresses(form.serviceAddr).length === 0) return 'Enter the profiler service address of at least one worker (host:port).';
  const whole = (v: number) => Number.isInteger(v) && v >= 0;
  if (!whole(form.durationMs) || form.durationMs < 1) return 'The duration must be a whole number of milliseconds (at least 1).';
  if (!whole(form.numRetry)) return 'The number of retries must be a whole number (0 or more).';
  return null;
}

/** XProf's `/capture_profile` query parameters for the form. */
export function captureParams(form: CaptureForm): Params {
  return {
    service_addr: parseAddresses(form.serviceAddr).join(','),
    duration: String(form.durationMs),
    num_retry: String(form.numRetry),
    host_tracer_level: String(form.hostTracerLevel),
    device_tracer_level: String(form.deviceTracerLevel),
    python_tracer_level: String(form.pythonTracerLevel),
  };
}

/** What to do about a refused capture, by the server's HTTP status (API.md: capture errors). */
export function captureHint(status: number): string {
  switch (status) {
    case 0:
      return 'The oxprof server did not answer: is it still running?';
    case 400:
      return 'The server refused a parameter (named above): correct it and capture again.';
    case 403:
      return 'oxprof captures from programs on this machine (loopback addresses) only; to allow another target, start it with --capture-allow HOST:PORT.';
    case 409:
      return 'A run with that session id exists already: choose another session id (or leave it empty for a new one).';
    case 429:
      return 'Four captures are running already: wait for one to finish, then try again.';
    case 500:
      return 'oxprof failed on this machine; nothing was written. Try again; if it persists, run `oxprof capture` in a terminal to see why.';
    case 501:
      return 'This server cannot capture: start `oxprof serve LOGDIR` on a log directory to capture into it.';
    case 502:
      return 'No worker answered as a profiler: check that each program runs a profiler server at that address (jax.profiler.start_server(PORT), tf.profiler.experimental.server.start(PORT)).';
    default:
      return status >= 400 ? 'The capture failed; see the message above.' : '';
  }
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad request', 403: 'Forbidden', 409: 'Conflict', 429: 'Too many captures', 500: 'Internal error', 501: 'Not available', 502: 'Bad gateway' };

export interface CaptureDialogOptions {
  /** Sends the capture request (the server's answer, success or error). */
  capture: (params: Params) => Promise<CaptureReply>;
  /** Called with the new run's name after a successful capture. */
  onCaptured: (run: string) => void;
}

const levelSelect = (role: string, label: string, max: number, value: number, help: string) => {
  const select = h(
    'select',
    { 'data-role': role, id: `capture-${role}`, title: help },
    Array.from({ length: max + 1 }, (_, i) => h('option', { value: String(i) }, String(i))),
  );
  select.value = String(value);
  return { select, row: field(label, `capture-${role}`, select, help) };
};

function field(label: string, id: string, control: HTMLElement, help: string): HTMLElement {
  return h('div', { class: 'form-row' }, h('label', { for: id }, label), control, h('span', { class: 'form-help muted' }, help));
}

/** The dialog (one per app); `open()` shows it, Escape or Close hides it. */
export class CaptureDialog {
  readonly element: HTMLElement;
  private readonly form: HTMLFormElement;
  private readonly addr = h('input', {
    type: 'text',
    id: 'capture-service_addr',
    'data-role': 'service_addr',
    placeholder: 'localhost:9999, worker2:9999',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
  });
  private readonly duration = h('input', { type: 'number', id: 'capture-duration', 'data-role': 'duration', min: '1', step: '1', required: true });
  private readonly retries = h('input', { type: 'number', id: 'capture-num_retry', 'data-role': 'num_retry', min: '0', step: '1', required: true });
  private readonly host = levelSelect('host_tracer_level', 'Host trace level', 3, CAPTURE_DEFAULTS.hostTracerLevel, '0 off, 1 critical, 2 info, 3 verbose');
  private readonly device = levelSelect('device_tracer_level', 'Device trace level', 1, CAPTURE_DEFAULTS.deviceTracerLevel, '0 off, 1 on');
  private readonly python = levelSelect('python_tracer_level', 'Python trace level', 1, CAPTURE_DEFAULTS.pythonTracerLevel, '0 off, 1 on');
  private readonly submit = h('button', { type: 'submit', class: 'button primary', 'data-role': 'capture-submit' }, 'Capture');
  private readonly status = h('div', { class: 'capture-status', 'data-role': 'capture-status', 'aria-live': 'polite' });
  private readonly closeButton: HTMLButtonElement;
  private readonly keyListener = (e: KeyboardEvent) => this.onKey(e);
  private returnFocus: HTMLElement | null = null;
  private busy = false;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly options: CaptureDialogOptions) {
    this.duration.value = String(CAPTURE_DEFAULTS.durationMs);
    this.retries.value = String(CAPTURE_DEFAULTS.numRetry);
    const close = h('button', { type: 'button', class: 'button', 'data-role': 'capture-close' }, 'Close');
    close.addEventListener('click', () => this.close());
    this.closeButton = close;
    this.form = h(
      'form',
      { class: 'capture-form', novalidate: true },
      field('Profile service URL(s)', 'capture-service_addr', this.addr, 'host:port of each worker\'s profiler server, comma-separated'),
      field('Profiling duration (ms)', 'capture-duration', this.duration, 'how long to record'),
      this.host.row,
      this.device.row,
      this.python.row,
      field('Number of retries', 'capture-num_retry', this.retries, 'when a worker cannot be reached or records nothing'),
      h('div', { class: 'dialog-buttons' }, close, this.submit),
    );
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.run();
    });
    const box = h(
      'div',
      { class: 'dialog', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'capture-title', 'data-role': 'capture-dialog' },
      h('h2', { id: 'capture-title' }, 'Capture profile'),
      h('p', { class: 'muted' }, 'Records a profile from running programs (started with jax.profiler.start_server, tf.profiler.experimental.server.start, …) into the served log directory as a new run.'),
      this.form,
      this.status,
    );
    this.element = h('div', { class: 'dialog-backdrop hidden', 'data-role': 'capture-backdrop' }, box);
    this.element.addEventListener('mousedown', (e) => {
      if (e.target === this.element) this.close();
    });
  }

  get isOpen(): boolean {
    return !this.element.classList.contains('hidden');
  }

  open(): void {
    if (!this.element.isConnected) document.body.appendChild(this.element);
    this.returnFocus = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    this.element.classList.remove('hidden');
    // On the document: the focus may leave the dialog (e.g. the Capture button is disabled while waiting).
    document.addEventListener('keydown', this.keyListener);
    if (!this.busy) replaceChildren(this.status);
    this.addr.focus();
  }

  close(): void {
    if (!this.isOpen) return;
    this.element.classList.add('hidden');
    document.removeEventListener('keydown', this.keyListener);
    this.returnFocus?.focus();
  }

  /** The form's current values. */
  values(): CaptureForm {
    return {
      serviceAddr: this.addr.value,
      durationMs: Number(this.duration.value.trim() || NaN),
      numRetry: Number(this.retries.value.trim() || NaN),
      hostTracerLevel: Number(this.host.select.value),
      deviceTracerLevel: Number(this.device.select.value),
      pythonTracerLevel: Number(this.python.select.value),
    };
  }

  private onKey(e: KeyboardEvent): void {
    if (e.key === 'Escape') {
      e.preventDefault();
      this.close();
      return;
    }
    if (e.key !== 'Tab') return;
    // Keep the focus inside the dialog.
    const focusable = [...this.element.querySelectorAll<HTMLElement>('input, select, button')].filter((el) => !(el as HTMLButtonElement).disabled);
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (!first || !last) return;
    if (!this.element.contains(document.activeElement)) {
      e.preventDefault();
      first.focus();
    } else if (e.shiftKey && document.activeElement === first) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault();
      first.focus();
    }
  }

  /** Validates, sends the request, and shows progress then the answer. */
  async run(): Promise<void> {
    if (this.busy) return;
    const form = this.values();
    const invalid = validateCapture(form);
    if (invalid) {
      this.show('error', invalid);
      return;
    }
    const params = captureParams(form);
    const workers = parseAddresses(form.serviceAddr).length;
    this.busy = true;
    this.submit.disabled = true;
    this.element.dataset.state = 'capturing';
    const started = Date.now();
    const progress = h('span', { 'data-role': 'capture-elapsed' }, '');
    const tick = () => {
      progress.textContent = ` (${Math.floor((Date.now() - started) / 1000)} s)`;
    };
    tick();
    this.timer = setInterval(tick, 1000);
    replaceChildren(
      this.status,
      h(
        'div',
        { class: 'loading-inline', 'data-role': 'capture-progress' },
        h('span', { class: 'spinner' }),
        `Capturing ${form.durationMs} ms from ${workers} worker${workers === 1 ? '' : 's'}…`,
        progress,
      ),
    );
    let reply: CaptureReply;
    try {
      reply = await this.options.capture(params);
    } catch (e) {
      reply = { ok: false, status: 0, error: e instanceof Error ? e.message : String(e), captured: [], failed: [] };
    } finally {
      clearInterval(this.timer);
      this.busy = false;
      this.submit.disabled = false;
    }
    // The Capture button had the focus and was disabled: keep the keyboard in the dialog.
    if (this.isOpen && !this.element.contains(document.activeElement)) this.closeButton.focus();
    if (reply.ok && reply.run) {
      this.show('done', reply.result || 'Capture profile successfully.', reply);
      this.options.onCaptured(reply.run);
    } else {
      this.show('error', reply.error || (reply.ok ? 'The server did not name the new run.' : `The capture failed (HTTP ${reply.status}).`), reply);
    }
  }

  private show(state: 'done' | 'error', message: string, reply?: CaptureReply): void {
    this.element.dataset.state = state;
    const failed = reply?.failed ?? [];
    const captured = reply?.captured ?? [];
    const status = state === 'error' && reply ? reply.status : null;
    if (status !== null) this.element.dataset.status = String(status);
    else delete this.element.dataset.status;
    const hint = status !== null ? captureHint(status) : '';
    replaceChildren(
      this.status,
      h(
        'div',
        state === 'error'
          ? { class: 'error', role: 'alert', 'data-role': 'capture-error' }
          : { class: 'capture-done', role: 'status', 'data-role': 'capture-result' },
        h('p', { 'data-role': 'capture-message' }, message),
        hint ? h('p', { 'data-role': 'capture-hint', class: 'capture-hint' }, hint) : null,
        status ? h('p', { class: 'muted', 'data-role': 'capture-status-code' }, `HTTP ${status}${STATUS_TEXT[status] ? ` · ${STATUS_TEXT[status]}` : ''}`) : null,
        state === 'done' && reply?.run ? h('p', null, 'New run: ', h('code', { 'data-role': 'capture-run' }, reply.run)) : null,
        captured.length
          ? h('div', null, h('span', null, 'Captured:'), h('ul', { 'data-role': 'capture-captured' }, captured.map((c) => h('li', null, h('code', null, c.address)))))
          : null,
        failed.length
          ? h(
              'div',
              null,
              h('span', null, state === 'done' ? 'These workers failed:' : 'Failed workers:'),
              h(
                'ul',
                { 'data-role': 'capture-failed' },
                failed.map((f) =>
                  h(
                    'li',
                    { 'data-address': f.address },
                    h('code', null, f.address),
                    ': ',
                    f.error ?? 'failed',
                    f.attempts !== undefined ? ` (${f.attempts} attempt${f.attempts === 1 ? '' : 's'})` : '',
                  ),
                ),
              ),
            )
          : null,
      ),
    );
  }
}
