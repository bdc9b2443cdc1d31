import { writeUtf8 } from '../wasm/batch.js'

/**
 * Partition choice identical to the Java producer's BuiltInPartitioner: keyed records go to
 * toPositive(murmur2(key)) % numPartitions over all partitions; keyless records stick to one
 * partition until about batch.size bytes went there (KIP-794), then move to another one, chosen
 * at random weighted toward shorter queues when adaptive partitioning is on.
 */
export function murmur2(data: Uint8Array, length = data.length): number {
  const m = 0x5bd1e995
  const r = 24
  let h = 0x9747b28c ^ length
  const words = length >> 2
  for (let i = 0; i < words; i++) {
    const o = i * 4
    let k = data[o]! | (data[o + 1]! << 8) | (data[o + 2]! << 16) | (data[o + 3]! << 24)
    k = Math.imul(k, m)
    k ^= k >>> r
    k = Math.imul(k, m)
    h = Math.imul(h, m)
    h ^= k
  }
  const tail = words * 4
  const rem = length & 3
  if (rem === 3) h ^= data[tail + 2]! << 16
  if (rem >= 2) h ^= data[tail + 1]! << 8
  if (rem >= 1) {
    h ^= data[tail]!
    h = Math.imul(h, m)
  }
  h ^= h >>> 13
  h = Math.imul(h, m)
  h ^= h >>> 15
  return h | 0
}

export const toPositive = (n: number): number => n & 0x7fffffff

/** A string key's UTF-8 bytes, for murmur2 (send() keeps strings as strings until they reach WASM memory). */
let keyScratch = new Uint8Array(256)

export function partitionForKey(key: Uint8Array | string, numPartitions: number): number {
  if (typeof key !== 'string') return toPositive(murmur2(key)) % numPartitions
  if (keyScratch.length < 3 * key.length) keyScratch = new Uint8Array(3 * key.length)
  return toPositive(murmur2(keyScratch, writeUtf8(keyScratch, key, 0))) % numPartitions
}

/** Partitions with a known leader, or a function computing them only when a switch needs them. */
type Available = number[] | (() => number[])
const resolve = (a: Available): number[] => (typeof a === 'function' ? a() : a)

interface StickyState { partition: number; producedBytes: number }

export class StickyPartitioner {
  private readonly sticky = new Map<string, StickyState>()
  /** The last topic looked up and its state: partition() and onAppend() run once per record each. */
  private lastTopic: string | null = null
  private last: StickyState | undefined

  private state(topic: string): StickyState | undefined {
    if (topic === this.lastTopic) return this.last
    const s = this.sticky.get(topic)
    this.lastTopic = topic
    this.last = s
    return s
  }

  constructor(private readonly batchSize: number, private readonly adaptive: boolean, private readonly random: () => number) {}

  /**
   * The partition for a keyless record. `available` are partitions with a known leader; `queueSize`
   * gives each partition's queued batch count for adaptive weighting.
   */
  partition(topic: string, numPartitions: number, available: Available, queueSize: (p: number) => number): number {
    let s = this.state(topic)
    if (!s || s.partition >= numPartitions) {
      s = { partition: this.next(numPartitions, resolve(available), queueSize, -1), producedBytes: 0 }
      this.sticky.set(topic, s)
      this.last = s
    }
    return s.partition
  }

  /**
   * Called after each append: switches once batch.size bytes went to the sticky partition and a new
   * batch is starting (so batches fill), or at 2x batch.size regardless.
   */
  onAppend(topic: string, appendedBytes: number, batchFull: boolean, numPartitions: number, available: Available, queueSize: (p: number) => number): void {
    const s = this.state(topic)
    if (!s) return
    s.producedBytes += appendedBytes
    if ((s.producedBytes >= this.batchSize && batchFull) || s.producedBytes >= 2 * this.batchSize) {
      s.partition = this.next(numPartitions, resolve(available), queueSize, s.partition)
      s.producedBytes = 0
    }
  }

  private next(numPartitions: number, available: number[], queueSize: (p: number) => number, current: number): number {
    const all = available.length > 0 ? available : Array.from({ length: numPartitions }, (_, i) => i)
    // Leaving the current partition out of the draw keeps the others in proportion to their weights
    // (stepping from a hit on it to its neighbour favoured whichever partition came next).
    const candidates = all.length > 1 ? all.filter((p) => p !== current) : all
    if (candidates.length === 1) return candidates[0]!
    if (!this.adaptive) return candidates[Math.floor(this.random() * candidates.length)]!
    // Weight = (longest queue + 1 - own queue): a partition whose broker drains slowly gets fewer records.
    const sizes = candidates.map(queueSize)
    const max = Math.max(...sizes)
    const weights = sizes.map((q) => max + 1 - q)
    const total = weights.reduce((a, b) => a + b, 0)
    let pick = this.random() * total
    for (let i = 0; i < candidates.length; i++) {
      pick -= weights[i]!
      if (pick < 0) return candidates[i]!
    }
    return candidates[candidates.length - 1]!
  }
}
