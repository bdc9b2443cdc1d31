// A hidden browser tab clamps setTimeout to a second or more; the sender and the analytics SDK wake
// "now" through nextTask, which must not wait on any timer there. Outside a page nothing throttles
// timers, and nextTask stays a plain setTimeout(fn, 0).
import { afterEach, describe, expect, it, vi } from 'vitest'
import { taskScheduler } from '../../src/edge/clock.js'

const page = { document: {}, MessageChannel }

describe('waking the sender in a hidden tab', () => {
  afterEach(() => { vi.useRealTimers() })

  it('a zero-delay task runs while every timer is held back', async () => {
    const nextTask = taskScheduler(page)
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const order: number[] = []
    await new Promise<void>((resolve) => {
      nextTask(() => order.push(1))
      nextTask(() => { order.push(2); resolve() })
    })
    expect(order).toEqual([1, 2])
  })

  it('a cancelled task never runs, and the tasks queued after it still do', async () => {
    const nextTask = taskScheduler(page)
    const { systemClock } = await import('../../src/edge/clock.js')
    const ran: string[] = []
    const first = nextTask(() => ran.push('cancelled'))
    systemClock.clearTimeout(first)
    await new Promise<void>((resolve) => nextTask(() => { ran.push('next'); resolve() }))
    expect(ran).toEqual(['next'])
  })

  it('outside a page it is setTimeout(fn, 0): held back with the timers', async () => {
    const nextTask = taskScheduler({ MessageChannel })
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    let ran = false
    nextTask(() => { ran = true })
    await new Promise<void>((resolve) => queueMicrotask(resolve))
    expect(ran).toBe(false)
    vi.advanceTimersByTime(0)
    expect(ran).toBe(true)
  })
})
