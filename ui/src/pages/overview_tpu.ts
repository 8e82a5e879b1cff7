// The TPU training part of the Overview page: the performance summary components XProf's
// overview documents for TPU training runs (FLOPS utilization, TPU duty cycle, memory
// bandwidth utilization, program goodput efficiency, device compute precisions), each a
// `data-component` block whose values carry the XProf property they show (`data-prop`).
// Kept apart from overview.ts so that the training and inference variants merge cleanly.

import { card } from '../components/common';
import { h } from '../dom';

type Props = Record<string, string | undefined>;

/** One component: a title, a tooltip saying what it measures, and labelled values. */
interface TpuComponent {
  id: string;
  title: string;
  tooltip: string;
  values: { label: string; key: string; source: 'general' | 'input' }[];
  /** Shown when XProf gives none of the values (why it is missing). */
  missing: string;
}

/** The components, in XProf's order (`performance_summary.ts`: TPU summary, then precisions). */
export const TPU_TRAINING_COMPONENTS: TpuComponent[] = [
  {
    id: 'flops-utilization',
    title: 'FLOPS utilization',
    tooltip: "The hardware counter's utilization of the TPU matrix units, and the FLOPS rate compared to the program's optimum for its mix of operations.",
    values: [
      { label: 'Utilization of TPU matrix units', key: 'mxu_utilization_percent', source: 'general' },
      { label: "Compared to program's optimal FLOPS", key: 'flop_rate_utilization_relative_to_roofline', source: 'general' },
    ],
    missing: 'n/a (no hardware counters in this profile)',
  },
  {
    id: 'tpu-duty-cycle',
    title: 'TPU duty cycle',
    tooltip: 'Percentage of the device time that is busy (TensorCores running ops other than infeed, outfeed and host transfers).',
    values: [{ label: 'Busy', key: 'device_duty_cycle_percent', source: 'general' }],
    missing: 'n/a',
  },
  {
    id: 'memory-bandwidth-utilization',
    title: 'Memory bandwidth utilization',
    tooltip: "The HBM bandwidth utilization from the hardware counters, and the bandwidth compared to the program's optimum for the bytes it accesses.",
    values: [
      { label: 'HBM utilization', key: 'hbm_utilization_percent', source: 'general' },
      { label: "Compared to program's optimal bandwidth", key: 'memory_bw_utilization_relative_to_hw_limit', source: 'general' },
    ],
    missing: 'n/a (no hardware counters in this profile)',
  },
  {
    id: 'program-goodput-efficiency',
    title: 'Program goodput efficiency',
    tooltip: 'The share of device time spent in useful program work (XProf reports it when the TPU runtime records it).',
    values: [{ label: 'Goodput', key: 'program_goodput_percent', source: 'general' }],
    missing: 'n/a (not recorded in this profile: XProf reports it only when the TPU runtime provides it)',
  },
  {
    id: 'device-compute-precisions',
    title: 'Device compute precisions',
    tooltip: 'Share of device compute time in 16-bit and 32-bit operations.',
    values: [
      { label: '16-bit', key: 'device_compute_16bit_percent', source: 'general' },
      { label: '32-bit', key: 'device_compute_32bit_percent', source: 'general' },
    ],
    missing: 'n/a (XProf records no precision for TPU steps)',
  },
  {
    id: 'tensorcore-active-time',
    title: 'TensorCore active time',
    tooltip: 'Average time per step the TensorCores were active.',
    values: [{ label: 'Average per step', key: 'tc_active_ms_average', source: 'input' }],
    missing: 'n/a',
  },
];

/** The TPU training summary card (the overview's general table props and step table props). */
export function tpuTrainingSummary(general: Props, input: Props): HTMLElement {
  const blocks = TPU_TRAINING_COMPONENTS.map((c) => {
    const present = c.values.filter((v) => (v.source === 'general' ? general : input)[v.key] !== undefined);
    const values = present.length
      ? h(
          'dl',
          { class: 'properties' },
          present.map((v) => {
            const raw = (v.source === 'general' ? general : input)[v.key] ?? '';
            return [h('dt', null, v.label), h('dd', { 'data-prop': v.key }, v.source === 'input' ? `${raw} ms` : raw)];
          }),
        )
      : h('p', { class: 'description', 'data-role': 'missing' }, c.missing);
    return h('div', { class: 'summary-list', 'data-component': c.id, title: c.tooltip }, h('h3', null, c.title), values);
  });
  const section = card('TPU training summary', h('div', { class: 'summary-columns' }, ...blocks));
  section.dataset.section = 'tpu-training';
  return section;
}
