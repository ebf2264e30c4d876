// The own-reads model's lists per participant: its open and closed orders, each most
// recently updated first, and its fills in the fills API's order, each with its floor.

/** An order in a participant's open or closed list, as the model holds it. */
export class OrderNode {
  prev: OrderNode | null = null;
  next: OrderNode | null = null;
  /** 0: in no list, 1: the open list, 2: the closed list. */
  list = 0;
  ids: Int32Array;
  runNo = 0;
  sessionNo = 0;
  side = 0;
  orderType = 0;
  timeInForce = 0;
  state = 0;
  priceNanos = 0;
  quantity = 0;
  filled = 0;
  currency = 0;
  updatedAtUs = 0;
  clientOrderId: Uint8Array | null = null;
  clientOrderKnown = true;

  constructor(
    readonly key: string,
    ids: Int32Array,
  ) {
    this.ids = ids;
  }
}

/** Most recently updated first (ties: any order; a read sorts them by orderId). */
export class OrderList {
  head: OrderNode | null = null;
  tail: OrderNode | null = null;
  size = 0;

  /** Inserted before the first node updated no later: at the head, unless the shards' clocks crossed. */
  insert(node: OrderNode, list: number): void {
    let after: OrderNode | null = null;
    let at = this.head;
    while (at !== null && at.updatedAtUs > node.updatedAtUs) {
      after = at;
      at = at.next;
    }
    node.prev = after;
    node.next = at;
    if (after === null) this.head = node;
    else after.next = node;
    if (at === null) this.tail = node;
    else at.prev = node;
    node.list = list;
    this.size++;
  }

  /** Appended after the tail (a restore, which gives the nodes most recent first). */
  append(node: OrderNode, list: number): void {
    node.prev = this.tail;
    node.next = null;
    if (this.tail === null) this.head = node;
    else this.tail.next = node;
    this.tail = node;
    node.list = list;
    this.size++;
  }

  remove(node: OrderNode): void {
    if (node.prev === null) this.head = node.next;
    else node.prev.next = node.next;
    if (node.next === null) this.tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = null;
    node.next = null;
    node.list = 0;
    this.size--;
  }
}

/** One execution of a participant's order. */
export class Fill {
  constructor(
    readonly shard: number,
    readonly sequence: number,
    readonly tradeSequence: number,
    readonly ids: Int32Array,
    readonly side: number,
    readonly quantity: number,
    readonly priceNanos: number,
    readonly currency: number,
    readonly occurredAtUs: number,
  ) {}
}

/** The fills API order: most recent first, then shard ascending, then sequence descending. */
export function newerFill(a: Fill, b: Fill): boolean {
  if (a.occurredAtUs !== b.occurredAtUs) return a.occurredAtUs > b.occurredAtUs;
  if (a.shard !== b.shard) return a.shard < b.shard;
  return a.sequence > b.sequence;
}

/** What the model holds of one participant: its lists and, per list, the floor at or below which it lacks rows. */
export class ParticipantReads {
  readonly open = new OrderList();
  readonly closed = new OrderList();
  /** Oldest first; `first` is where the kept ones start (the array is compacted now and then). */
  fills: Fill[] = [];
  first = 0;
  openFloorUs: number;
  closedFloorUs: number;
  fillsFloorUs: number;

  constructor(floors: { orders: number; fills: number }) {
    this.openFloorUs = floors.orders;
    this.closedFloorUs = floors.orders;
    this.fillsFloorUs = floors.fills;
  }
}
