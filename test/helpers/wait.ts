/** Poll `probe` until it returns a value other than undefined; bounded, never a timing assertion. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, limitMs = 20_000): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Resolve on the first emitted value for which `accept` holds. */
export function nextEvent<T>(subscribe: (listener: (value: T) => void) => () => void, accept: (value: T) => boolean = () => true): Promise<T> {
  return new Promise((resolve) => {
    const unsubscribe = subscribe((value) => {
      if (!accept(value)) return;
      unsubscribe();
      resolve(value);
    });
  });
}
