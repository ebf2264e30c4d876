// Who is calling, and what they may do. Principals come from PRINCIPALS_FILE; bearer
// tokens are stored only as SHA-256 hex. Roles (API contract):
//   trader   order commands, own-order reads, own command status, market data
//   operator everything under /admin/v1, all settlement reads, any command status
//   viewer   market data and availability only
// Operators and viewers may scrape the metrics (GET /metrics).
// Every role may read the venue session and the OpenAPI document.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isUuid } from '../core/uuid.ts';

/** The development principals (their tokens are in the README), used when PRINCIPALS_FILE is unset; resolved in the main thread. */
export const DEFAULT_PRINCIPALS_FILE = fileURLToPath(new URL('./principals.dev.json', import.meta.url));

export type Role = 'trader' | 'operator' | 'viewer';
export type Permission = 'orders' | 'own-reads' | 'command-status-own' | 'command-status-any' | 'market-data' | 'admin' | 'settlement' | 'metrics' | 'public';

const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  trader: ['orders', 'own-reads', 'command-status-own', 'market-data', 'public'],
  operator: ['admin', 'settlement', 'command-status-any', 'command-status-own', 'market-data', 'metrics', 'public'],
  viewer: ['market-data', 'metrics', 'public'],
};

export interface Principal {
  /** Position in the file: a small number that fits in shared records. */
  index: number;
  principalId: string;
  roles: ReadonlySet<Role>;
  permissions: ReadonlySet<Permission>;
  /** participantId -> accountIds it may use. */
  participants: ReadonlyMap<string, ReadonlySet<string>>;
}

interface PrincipalFileEntry {
  principalId: unknown;
  tokenSha256: unknown;
  roles: unknown;
  participants: unknown;
}

const TOKEN_CACHE_MAX = 4096;

export class Principals {
  readonly list: Principal[];
  private readonly byTokenHash: Map<string, Principal>;
  private readonly byToken = new Map<string, Principal>();

  constructor(list: Principal[], byTokenHash: Map<string, Principal>) {
    this.list = list;
    this.byTokenHash = byTokenHash;
  }

  static load(path: string): Principals {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new Error(`PRINCIPALS_FILE ${path} cannot be read as JSON: ${(error as Error).message}`, { cause: error });
    }
    return Principals.fromJson(parsed, path);
  }

  static fromJson(parsed: unknown, source = 'principals'): Principals {
    const entries = (parsed as { principals?: unknown }).principals;
    if (!Array.isArray(entries)) throw new Error(`${source}: expected { "principals": [...] }`);
    const list: Principal[] = [];
    const byTokenHash = new Map<string, Principal>();
    entries.forEach((raw: PrincipalFileEntry, index) => {
      const where = `${source}: principals[${index}]`;
      if (typeof raw.principalId !== 'string' || raw.principalId === '') throw new Error(`${where}.principalId must be a non-empty string`);
      if (typeof raw.tokenSha256 !== 'string' || !/^[0-9a-f]{64}$/.test(raw.tokenSha256)) {
        throw new Error(`${where}.tokenSha256 must be 64 lower-case hex characters`);
      }
      if (!Array.isArray(raw.roles) || raw.roles.length === 0 || !raw.roles.every((r) => r in ROLE_PERMISSIONS)) {
        throw new Error(`${where}.roles must list trader, operator or viewer`);
      }
      if (!Array.isArray(raw.participants)) throw new Error(`${where}.participants must be an array`);
      const participants = new Map<string, Set<string>>();
      for (const p of raw.participants as Array<{ participantId?: unknown; accountIds?: unknown }>) {
        if (typeof p.participantId !== 'string' || !isUuid(p.participantId)) throw new Error(`${where}: participantId must be a UUID`);
        if (!Array.isArray(p.accountIds) || !p.accountIds.every((a) => typeof a === 'string' && isUuid(a))) {
          throw new Error(`${where}: accountIds must be UUIDs`);
        }
        participants.set(p.participantId.toLowerCase(), new Set((p.accountIds as string[]).map((a) => a.toLowerCase())));
      }
      const roles = new Set(raw.roles as Role[]);
      const principal: Principal = {
        index,
        principalId: raw.principalId,
        roles,
        permissions: new Set([...roles].flatMap((role) => ROLE_PERMISSIONS[role])),
        participants,
      };
      if (byTokenHash.has(raw.tokenSha256)) throw new Error(`${where}: the token is already used by another principal`);
      byTokenHash.set(raw.tokenSha256, principal);
      list.push(principal);
    });
    return new Principals(list, byTokenHash);
  }

  /** The principal of an `Authorization: Bearer <token>` header, or null. */
  authenticate(authorization: string): Principal | null {
    if (authorization.length < 8 || authorization.length > 512) return null;
    const space = authorization.indexOf(' ');
    if (space !== 6 || !isBearer(authorization)) return null;
    const token = authorization.slice(space + 1).trim();
    if (token === '') return null;
    const cached = this.byToken.get(token);
    if (cached !== undefined) return cached;
    const principal = this.byTokenHash.get(createHash('sha256').update(token).digest('hex')) ?? null;
    if (principal !== null) {
      if (this.byToken.size >= TOKEN_CACHE_MAX) this.byToken.clear();
      this.byToken.set(token, principal);
    }
    return principal;
  }
}

const BEARER = 'bearer';

/** Whether the header starts with "Bearer" in any case (compared by character, no lower-cased copy per request). */
function isBearer(authorization: string): boolean {
  for (let k = 0; k < 6; k++) if ((authorization.charCodeAt(k) | 0x20) !== BEARER.charCodeAt(k)) return false;
  return true;
}

export function mayActFor(principal: Principal, participantId: string, accountId?: string): boolean {
  const accounts = principal.participants.get(participantId.toLowerCase());
  if (accounts === undefined) return false;
  return accountId === undefined || accounts.has(accountId.toLowerCase());
}
