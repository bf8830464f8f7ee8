/**
 * A map holding at most `max` entries: setting one past the cap forgets the least recently set, so that
 * per-client state or a cache cannot grow the server's memory without limit.
 */
export class RecentMap<K, V> extends Map<K, V> {
  constructor(private readonly max: number) {
    super();
  }

  /** Sets `key` as the most recent entry, forgetting the least recent ones beyond the cap. */
  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    for (const oldest of this.keys()) {
      if (this.size <= this.max) break;
      super.delete(oldest);
    }
    return this;
  }
}
