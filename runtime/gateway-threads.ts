// The gateway threads: spawned first, with their ports to the storage threads, and
// listening on the venue's port while the rest of the start runs (/readyz says "starting").

import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import type { VenueConfig } from '../core/config.ts';
import type { GatewayMessage, GatewayThreadData } from '../gateway/gateway-thread.ts';
import type { PortClaim } from '../gateway/port-claim.ts';
import { relaySessionRolls } from '../gateway/session-roll.ts';
import type { VenueMemory } from '../gateway/venue-memory.ts';
import type { OpenedSession } from './storage-start.ts';
import { once } from './thread-messages.ts';
import { logger, type ThreadEntry } from './venue.ts';
import { spawnWorker } from './worker-spawn.ts';

/** The storage threads' ends of the gateways' ports, one of each per gateway. */
export interface GatewayPorts {
  /** To the read thread. */
  readPorts: MessagePort[];
  /** To the persistence thread: administration, and each principal's own reads. */
  adminPorts: MessagePort[];
  ownReadPorts: MessagePort[];
}

/** Spawns GATEWAY_THREADS gateways into `gateways` (each as it starts, so that a failed start stops those already running). */
export function spawnGateways(started: { config: VenueConfig; memory: VenueMemory; session: OpenedSession; port: number; entry: ThreadEntry }, gateways: Worker[]): GatewayPorts {
  const { config, memory, session, port, entry } = started;
  const readChannels = Array.from({ length: config.gatewayThreads }, () => new MessageChannel());
  const adminChannels = Array.from({ length: config.gatewayThreads }, () => new MessageChannel());
  const ownReadChannels = Array.from({ length: config.gatewayThreads }, () => new MessageChannel());
  for (let gatewayId = 0; gatewayId < config.gatewayThreads; gatewayId++) {
    const data: GatewayThreadData = {
      gatewayId,
      port,
      config,
      memory,
      session: session.active,
      knownSessions: session.known,
      readPort: readChannels[gatewayId]!.port1,
      adminPort: adminChannels[gatewayId]!.port1,
      ownReadPort: ownReadChannels[gatewayId]!.port1,
    };
    gateways.push(spawnWorker(entry('gateway'), { ...data }, { transferList: [data.readPort, data.adminPort, data.ownReadPort] }, `gateway-${gatewayId}`));
  }
  relaySessionRolls(gateways);
  return {
    readPorts: readChannels.map((channel) => channel.port2),
    adminPorts: adminChannels.map((channel) => channel.port2),
    ownReadPorts: ownReadChannels.map((channel) => channel.port2),
  };
}

/**
 * Listening first: /healthz answers (and /readyz says "starting") during the whole recovery.
 * The port's claim is let go when the first gateway is about to listen (its `bind`), not
 * before the threads start: the port is free only for a message's round trip.
 */
export async function gatewaysListen(gateways: readonly Worker[], claim: PortClaim): Promise<void> {
  await Promise.all(
    gateways.map(async (worker, gatewayId) => {
      const asked = await once<GatewayMessage>(worker, (m) => m.type === 'bind' || m.type === 'error', `gateway ${gatewayId}`);
      if (asked.type === 'error') throw new Error(asked.message);
      await claim.release();
      worker.postMessage({ type: 'listen' });
      logger.debug({ gatewayId }, 'the port claim let go: the gateway listens');
      const message = await once<GatewayMessage>(worker, (m) => m.type === 'ready' || m.type === 'error', `gateway ${gatewayId}`);
      if (message.type === 'error') throw new Error(message.message);
    }),
  );
}
