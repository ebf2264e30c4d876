// A small SVG line chart: client latency (p50 and p99, log scale) against throughput,
// one colour per processing mode, with the HTTP ceiling as a vertical line. Written by
// the load benchmark; linked from the README.

import { writeFileSync } from 'node:fs';

export interface Series {
  name: string;
  points: { x: number; p50: number; p99: number }[];
}

const W = 760;
const H = 420;
const M = { left: 70, right: 170, top: 40, bottom: 50 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

export function writeLatencyPlot(path: string, title: string, series: Series[], ceiling: number): string {
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const ys = series.flatMap((s) => s.points.flatMap((p) => [p.p50, p.p99])).filter((y) => y > 0);
  const xMax = Math.max(ceiling, ...xs, 1) * 1.05;
  const yMin = Math.pow(10, Math.floor(Math.log10(Math.max(1, Math.min(...ys, 1000)))));
  const yMax = Math.pow(10, Math.ceil(Math.log10(Math.max(...ys, 10_000))));
  const px = (x: number) => M.left + (x / xMax) * (W - M.left - M.right);
  const py = (y: number) => H - M.bottom - ((Math.log10(Math.max(y, yMin)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * (H - M.top - M.bottom);
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  parts.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${title}</text>`);
  // Axes, grid and ticks.
  for (let decade = yMin; decade <= yMax; decade *= 10) {
    const y = py(decade);
    parts.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    parts.push(`<text x="${M.left - 6}" y="${y + 4}" text-anchor="end">${decade >= 1000 ? `${decade / 1000} ms` : `${decade} µs`}</text>`);
  }
  const step = Math.pow(10, Math.floor(Math.log10(xMax / 5)));
  for (let x = 0; x <= xMax; x += step * (xMax / step > 10 ? 2 : 1)) {
    parts.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${H - M.bottom}" y2="${H - M.bottom + 4}" stroke="black"/>`);
    parts.push(`<text x="${px(x)}" y="${H - M.bottom + 18}" text-anchor="middle">${x >= 1000 ? `${x / 1000}k` : x}</text>`);
  }
  parts.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="black"/>`);
  parts.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="black"/>`);
  parts.push(`<text x="${(M.left + W - M.right) / 2}" y="${H - 12}" text-anchor="middle">answered requests per second</text>`);
  parts.push(`<line x1="${px(ceiling)}" x2="${px(ceiling)}" y1="${M.top}" y2="${H - M.bottom}" stroke="#888" stroke-dasharray="4 4"/>`);
  parts.push(`<text x="${px(ceiling) - 4}" y="${M.top + 12}" text-anchor="end" fill="#555">HTTP ceiling ${Math.round(ceiling)}/s</text>`);
  series.forEach((s, k) => {
    const colour = COLOURS[k % COLOURS.length]!;
    const sorted = [...s.points].sort((a, b) => a.x - b.x);
    for (const [field, dash] of [
      ['p50', ''],
      ['p99', ' stroke-dasharray="6 3"'],
    ] as const) {
      const d = sorted.map((p, i) => `${i === 0 ? 'M' : 'L'}${px(p.x).toFixed(1)},${py(p[field]).toFixed(1)}`).join(' ');
      parts.push(`<path d="${d}" fill="none" stroke="${colour}" stroke-width="2"${dash}/>`);
      for (const p of sorted) parts.push(`<circle cx="${px(p.x).toFixed(1)}" cy="${py(p[field]).toFixed(1)}" r="3" fill="${colour}"/>`);
    }
    const ly = M.top + 20 + k * 40;
    parts.push(`<line x1="${W - M.right + 10}" x2="${W - M.right + 40}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`);
    parts.push(`<text x="${W - M.right + 46}" y="${ly + 4}">${s.name} p50</text>`);
    parts.push(`<line x1="${W - M.right + 10}" x2="${W - M.right + 40}" y1="${ly + 16}" y2="${ly + 16}" stroke="${colour}" stroke-width="2" stroke-dasharray="6 3"/>`);
    parts.push(`<text x="${W - M.right + 46}" y="${ly + 20}">${s.name} p99</text>`);
  });
  parts.push('</svg>');
  writeFileSync(path, `${parts.join('\n')}\n`);
  return path;
}
