'use strict';
// A bounded FIFO channel for async functions on one event loop.
//
// Items live in a fixed ring buffer of `capacity` slots. The fast paths are synchronous and
// allocate nothing: trySend() stores into the ring (or hands the item straight to a waiting
// receiver), tryRecv() takes from the ring (and refills the slot from a waiting sender).
// Only when a side must block does it allocate one Promise (send()/recv()).
//
// Any number of senders and receivers may use it; waiters are served in FIFO order.

const EMPTY = Symbol('empty');

class Waiters {
  // A small FIFO of pending waiters that allocates nothing while it holds at most one
  // (the common case: one sender and one receiver per channel).
  constructor() {
    this.one = null;
    this.more = null; // array, only if several wait at once
    this.moreHead = 0;
  }

  get empty() {
    return this.one === null;
  }

  push(w) {
    if (this.one === null) {
      this.one = w;
    } else {
      if (this.more === null) this.more = [];
      this.more.push(w);
    }
  }

  shift() {
    const w = this.one;
    const more = this.more;
    if (more !== null && this.moreHead < more.length) {
      this.one = more[this.moreHead];
      more[this.moreHead++] = undefined;
      if (this.moreHead === more.length) {
        more.length = 0;
        this.moreHead = 0;
      }
    } else {
      this.one = null;
    }
    return w;
  }
}

class Channel {
  constructor(capacity) {
    if (!(capacity >= 1)) throw new RangeError('capacity must be >= 1');
    this.buf = new Array(capacity).fill(undefined);
    this.cap = capacity;
    this.head = 0; // index of the oldest item
    this.len = 0;
    this.receivers = new Waiters(); // resolve functions of blocked receivers
    this.senders = new Waiters(); // {item, resolve} of blocked senders
  }

  /** Store item without blocking; false when the channel is full. */
  trySend(item) {
    if (!this.receivers.empty) {
      // The ring is empty whenever a receiver waits: hand the item over directly.
      this.receivers.shift()(item);
      return true;
    }
    if (this.len === this.cap) return false;
    let tail = this.head + this.len;
    if (tail >= this.cap) tail -= this.cap;
    this.buf[tail] = item;
    this.len++;
    return true;
  }

  /** Send, blocking while full: `if (!ch.trySend(x)) await ch.send(x);` avoids the promise. */
  send(item) {
    if (this.trySend(item)) return Promise.resolve();
    return new Promise((resolve) => {
      this.senders.push({ item, resolve });
    });
  }

  /** Take the oldest item without blocking; EMPTY when there is none. */
  tryRecv() {
    if (this.len === 0) return EMPTY;
    const head = this.head;
    const item = this.buf[head];
    if (!this.senders.empty) {
      // A blocked sender means the ring is full: its item goes into the freed slot.
      const s = this.senders.shift();
      this.buf[head] = s.item;
      this.head = head + 1 === this.cap ? 0 : head + 1;
      s.resolve();
    } else {
      this.buf[head] = undefined;
      this.head = head + 1 === this.cap ? 0 : head + 1;
      this.len--;
    }
    return item;
  }

  /** Receive, blocking while empty: `let x = ch.tryRecv(); if (x === EMPTY) x = await ch.recv();` */
  recv() {
    const item = this.tryRecv();
    if (item !== EMPTY) return Promise.resolve(item);
    return new Promise((resolve) => {
      this.receivers.push(resolve);
    });
  }
}

module.exports = { Channel, EMPTY };
