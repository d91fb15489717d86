// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) extends when it loads: a spec that
// makes Lumino widgets imports this first.
if (typeof window.DragEvent === 'undefined') {
  class DragEvent extends MouseEvent {}
  (window as unknown as { DragEvent: typeof MouseEvent }).DragEvent = DragEvent;
}

export {};
