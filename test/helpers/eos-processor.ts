// A consume-process-produce processor for test/kafka/transactions-eos.test.ts, run as a child process
// (`node --import tsx test/helpers/eos-processor.ts '<json args>'`) so the test can kill -9 it.
//
// Input records come from a file the test wrote (read once with the Java reader); the processor starts
// from the group's committed offsets (read with the Java AdminClient after initTransactions(), which
// first aborts whatever a killed predecessor left open), writes one output record per input record and
// commits the input offsets for the group inside the same transaction. stdout: "ready <todo>", then
// "acked <n>" once a transaction's outputs are acknowledged (uncommitted) and "committed <n>" after
// its commit, "requests {...}" and "done" at the end.
import { readFileSync } from 'node:fs'
import { createProducer } from '../../src/edge/index.js'
import { tcp } from '../../src/edge/node.js'
import { groupOffsets, type Cluster } from './kafka.js'

interface Args { cluster: Cluster; input: string; output: string; group: string; transactionalId: string; inputFile: string; perTxn: number; pauseAt?: number }
interface InputRecord { partition: number; offset: number; value: string }

const args = JSON.parse(process.argv[2]!) as Args
const inputs = JSON.parse(readFileSync(args.inputFile, 'utf8')) as InputRecord[]
const bootstrap = args.cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',')

const requests: Record<string, number> = {}
const producer = createProducer({
  'bootstrap.servers': bootstrap, transport: tcp(), 'transactional.id': args.transactionalId, 'linger.ms': 1,
  observer: { onCoordinatorRequest: (r) => { requests[r.api] = (requests[r.api] ?? 0) + 1 } },
})
await producer.initTransactions()
const committed = new Map<number, number>()
for (const o of await groupOffsets(args.cluster, args.group)) if (o.topic === args.input) committed.set(o.partition, o.offset)
const todo = inputs.filter((r) => r.offset >= (committed.get(r.partition) ?? 0))
process.stdout.write(`ready ${todo.length}\n`)

let n = 0
for (let i = 0; i < todo.length; i += args.perTxn) {
  const chunk = todo.slice(i, i + args.perTxn)
  producer.beginTransaction()
  const acks = chunk.map((r) => producer.send({ topic: args.output, key: `${r.partition}:${r.offset}`, value: `out:${r.value}` }))
  // The outputs are in the log, uncommitted. At `pauseAt` the processor "works" a while before
  // committing, so a kill there lands inside the transaction.
  await Promise.all(acks)
  process.stdout.write(`acked ${n + 1}\n`)
  if (n + 1 === args.pauseAt) await new Promise((resolve) => setTimeout(resolve, 5000))
  const next: Record<number, number> = {}
  for (const r of chunk) next[r.partition] = Math.max(next[r.partition] ?? 0, r.offset + 1)
  await producer.sendOffsetsToTransaction({ [args.input]: next }, { groupId: args.group })
  await producer.commitTransaction()
  n++
  process.stdout.write(`committed ${n}\n`)
}
process.stdout.write(`requests ${JSON.stringify(requests)}\n`)
await producer.close()
process.stdout.write('done\n')
