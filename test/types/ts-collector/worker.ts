import { CounterWorker, DecodeError } from 'collector-cluster'
import type { CountIncrement, Message } from 'collector-cluster'

/** Each datagram is `<name> [n]`: counts n (default 1) under `<name>.<unit>`. */
export default class TallyWorker extends CounterWorker {
  countsOf (message: Message): CountIncrement[] {
    const [name, n = '1'] = message.data.toString('utf8').trim().split(/\s+/)
    if (!/^[a-z]+$/.test(name) || !/^\d+$/.test(n)) throw new DecodeError('badTally', `not "<name> [n]": ${name}`)
    return [{ metric: `${name}.${String(this.settings.unit ?? 'events')}`, n: Number(n) }]
  }
}
