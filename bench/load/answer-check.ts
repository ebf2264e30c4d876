// `npm run load -- --check`: what the load was answered, compared with what the venue itself
// says afterwards. Each sampled 2xx answer's command is read back through the command status
// route with the token that sent it; the view must hold the answer byte for byte
// (responsePayloadJson), its status and mode, and an outcome that agrees with it: COMPLETED
// for an accepted sync-result, REJECTED with the same code for a rejected one, and for a 202
// pointer a terminal COMPLETED or REJECTED reached within a bound.

import type { AnswerSample } from './worker.ts';

export interface CheckReport {
  checked: number;
  matched: number;
  mismatches: number;
  /** The first few mismatches, each with what differed. */
  examples: { commandId: string; problem: string }[];
}

interface StatusView {
  commandId?: string;
  route?: string;
  idempotencyKey?: string;
  status?: string;
  processingMode?: string;
  responseStatus?: number;
  responsePayloadJson?: string;
  orderId?: string;
  resultStatus?: string;
  rejectCode?: string;
  lastError?: string;
}

const EXAMPLES_MAX = 10;
const CONCURRENCY = 16;
/** A pointer's command must reach a terminal status within this of the check's start. */
const TERMINAL_WITHIN_MS = 60_000;
const POLL_MS = 100;
const TERMINAL = new Set(['COMPLETED', 'REJECTED', 'FAILED']);

/**
 * What is wrong with a command's status view given the answer the load got for it, or null
 * if they agree. A pointer's command not yet terminal is a problem: checkAnswers reads it
 * again until it is, or its time is up.
 */
export function answerProblem(sent: AnswerSample, mode: string, view: StatusView): string | null {
  const differs = (what: string, got: unknown, expected: unknown) => `${what} is ${JSON.stringify(got)}, the answer said ${JSON.stringify(expected)}`;
  if (view.commandId !== sent.commandId) return differs('commandId', view.commandId, sent.commandId);
  if (view.route !== sent.path) return differs('route', view.route, sent.path);
  if (view.idempotencyKey !== sent.commandId) return differs('idempotencyKey', view.idempotencyKey, sent.commandId);
  if (view.orderId !== sent.orderId) return differs('orderId', view.orderId, sent.orderId);
  if (view.processingMode !== mode) return differs('processingMode', view.processingMode, mode);
  if (view.responseStatus !== sent.status) return differs('responseStatus', view.responseStatus, sent.status);
  if (view.responsePayloadJson !== sent.body) return 'responsePayloadJson is not the answer byte for byte';
  let answer: { outcome?: { accepted?: unknown; rejected?: { code?: string } }; commandId?: string; status?: string; processingMode?: string };
  try {
    answer = JSON.parse(sent.body) as typeof answer;
  } catch {
    return 'the answer is not JSON';
  }
  if (sent.status === 202) {
    if (answer.commandId !== sent.commandId || answer.status !== 'ACCEPTED' || answer.processingMode !== mode) return `the pointer ${sent.body} is not this command's`;
    if (!TERMINAL.has(view.status ?? '')) return `status ${view.status}: not terminal within ${TERMINAL_WITHIN_MS / 1000} s`;
    if (view.status === 'FAILED') return `status FAILED (${view.lastError}) after an accepted pointer`;
    if (view.status !== (view.resultStatus === 'accepted' ? 'COMPLETED' : 'REJECTED')) return `status ${view.status} with resultStatus ${view.resultStatus}`;
    return null;
  }
  if (answer.outcome?.accepted !== undefined) {
    if (view.status !== 'COMPLETED' || view.resultStatus !== 'accepted') return differs('status', `${view.status}/${view.resultStatus}`, 'COMPLETED/accepted');
    return null;
  }
  const code = answer.outcome?.rejected?.code;
  if (code === undefined) return 'the answer holds neither outcome.accepted nor outcome.rejected';
  if (!(view.status === 'REJECTED' || view.status === 'FAILED') || view.resultStatus !== 'rejected') return differs('status', `${view.status}/${view.resultStatus}`, 'REJECTED/rejected');
  if (view.rejectCode !== code) return differs('rejectCode', view.rejectCode, code);
  return null;
}

async function readView(baseUrl: string, sent: AnswerSample): Promise<{ status: number; view: StatusView | null }> {
  const answer = await fetch(`${baseUrl}/api/v1/commands/${sent.commandId}`, { headers: { authorization: `Bearer ${sent.token}` } });
  const text = await answer.text();
  if (answer.status !== 200) return { status: answer.status, view: null };
  return { status: 200, view: JSON.parse(text) as StatusView };
}

/** Reads every sampled command back (CONCURRENCY at a time) and compares it with its answer. */
export async function checkAnswers(baseUrl: string, mode: string, samples: readonly AnswerSample[]): Promise<CheckReport> {
  const report: CheckReport = { checked: 0, matched: 0, mismatches: 0, examples: [] };
  const until = performance.now() + TERMINAL_WITHIN_MS;
  let next = 0;
  const one = async (sent: AnswerSample): Promise<void> => {
    let problem: string | null;
    for (;;) {
      const { status, view } = await readView(baseUrl, sent);
      if (view === null) {
        problem = `the status read answered ${status}`;
        break;
      }
      problem = answerProblem(sent, mode, view);
      // A pointer's command may still be on its way to a terminal status: read it again, bounded.
      if (sent.status !== 202 || TERMINAL.has(view.status ?? '') || performance.now() > until) break;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    report.checked++;
    if (problem === null) report.matched++;
    else {
      report.mismatches++;
      if (report.examples.length < EXAMPLES_MAX) report.examples.push({ commandId: sent.commandId, problem });
    }
  };
  const lane = async () => {
    while (next < samples.length) await one(samples[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, samples.length) }, lane));
  return report;
}
