/** Indexing that fails loudly instead of yielding undefined (the repo compiles with noUncheckedIndexedAccess). */
export function itemAt<T>(items: ArrayLike<T>, index: number): T {
  const item = items[index];
  if (item === undefined) {
    throw new RangeError(`index ${index} outside 0..${items.length - 1}`);
  }
  return item;
}
