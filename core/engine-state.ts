// How each part of a matching engine names its state to be saved and read back
// (persistence/engine-snapshot.ts writes and reads the file): scalars, and views of its
// typed arrays, in one fixed order.

/** What a saved engine must match to be restored into (persistence/engine-snapshot.ts). */
export interface EngineShape {
  orderCapacity: number;
  instrumentCapacity: number;
  ownerCapacity: number;
  hashSeed: number;
}

/** Where a part of the engine writes its state: scalars, and views of its typed arrays (not copied). */
export interface StateWriter {
  number(name: string, value: number): void;
  array(name: string, view: ArrayBufferView): void;
}

/** Where a part reads it back, in the order it was written. */
export interface StateReader {
  /** The scalar `name`; `missing`, if given, when the state has none (a file written before the scalar existed), else an error. */
  number(name: string, missing?: number): number;
  /** The byte length of the next section, which must be `name`. */
  length(name: string): number;
  /** Fills `target` from the next section, which must be `name` and exactly as long. */
  into(name: string, target: ArrayBufferView): void;
}

export interface SnapshotHeader {
  token: string;
  shard: number;
  sequence: number;
  /** The shard's last batch number (batch ids go on across a restart). */
  batch: number;
  shape: EngineShape;
  numbers: Record<string, number>;
  sections: [string, number][];
}

/** A copy of the engine's state taken between two commands, to be written elsewhere (persistence/engine-snapshot.ts, writeEngineCapture) while the engine runs on. */
export interface EngineCapture {
  header: SnapshotHeader;
  /** The sections, one after another, from byte 0 of `body`. */
  body: ArrayBuffer | SharedArrayBuffer;
  bytes: number;
}
