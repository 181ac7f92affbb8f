package gvl

// An Event is something that happened to a Lock, reported to the hook set
// with WithHook, in the spirit of Ruby's rb_internal_thread_add_event_hook.
type Event uint8

const (
	// EventWaiting: the calling goroutine found the lock held and is about
	// to wait for it (also reported by Yield when it queues again).
	EventWaiting Event = iota + 1
	// EventAcquired: the calling goroutine now holds the lock.
	EventAcquired
	// EventReleased: the calling goroutine is about to give the lock up,
	// by Release, Yield or Blocking. It still holds the lock during the hook.
	EventReleased
)

// String returns the event's name.
func (e Event) String() string {
	switch e {
	case EventWaiting:
		return "waiting"
	case EventAcquired:
		return "acquired"
	case EventReleased:
		return "released"
	}
	return "gvl.Event(?)"
}

// emit reports e to the hook, if any. The hook is fixed at New, so an unset
// hook costs a load and a predictable branch.
func (l *Lock) emit(e Event) {
	if h := l.hook; h != nil {
		h(e)
	}
}
