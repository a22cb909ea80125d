// A uPlot line chart of one measure over time, one line per series. uPlot is loaded on first use
// (its own file), sizes itself to its container, and styles its elements through the CSSOM,
// which the console's content security policy allows (no inline style attributes).
import { useEffect, useRef, useState } from 'preact/hooks';
import type uPlot from 'uplot';

export type ChartSeries = { label: string; values: number[] };

type ChartProps = { title: string; times: number[]; series: ChartSeries[]; format: (value: number) => string };

const PALETTE = ['#2563eb', '#db2777', '#16a34a', '#ea580c', '#7c3aed', '#0891b2', '#ca8a04', '#dc2626', '#4b5563', '#059669'];
const HEIGHT = 220;

let library: Promise<typeof uPlot> | null = null;
const loadLibrary = () => (library ??= import('uplot').then((module) => module.default));

export function Chart({ title, times, series, format }: ChartProps) {
  const container = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState<string | null>(null);

  useEffect(() => {
    const element = container.current;
    if (!element || times.length === 0) return;
    let plot: uPlot | null = null;
    let observer: ResizeObserver | null = null;
    let live = true;
    loadLibrary().then(
      (UPlot) => {
        if (!live) return;
        const options: uPlot.Options = {
          width: Math.max(element.clientWidth, 200),
          height: HEIGHT,
          series: [
            {},
            ...series.map((line, index) => ({
              label: line.label,
              stroke: PALETTE[index % PALETTE.length],
              width: 2,
              points: { show: times.length < 60 },
              value: (_: uPlot, value: number | null) => (value === null ? '—' : format(value)),
            })),
          ],
          axes: [{}, { values: (_: uPlot, ticks: number[]) => ticks.map(format), size: 80 }],
          legend: { live: true },
        };
        plot = new UPlot(options, [times, ...series.map((line) => line.values)] as uPlot.AlignedData, element);
        observer = new ResizeObserver(() => plot?.setSize({ width: Math.max(element.clientWidth, 200), height: HEIGHT }));
        observer.observe(element);
      },
      (error: unknown) => live && setFailed(error instanceof Error ? error.message : String(error)),
    );
    return () => {
      live = false;
      observer?.disconnect();
      plot?.destroy();
    };
  }, [times, series, format]);

  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {failed && (
        <p class="alert" role="alert">
          The chart could not be drawn: {failed}
        </p>
      )}
      {times.length === 0 ? <p class="muted">No calls in this period.</p> : <div ref={container} class="chart-area" role="img" aria-label={`${title} chart`} />}
    </figure>
  );
}
