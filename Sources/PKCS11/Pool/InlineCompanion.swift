import Foundation

/// The thread that makes one caller thread's inline HSM calls (``HSMDispatch/inline``) with a
/// session of its own, while the caller waits for it: at most ``SessionPool/inlineWaitBound``.
///
/// Why not on the caller's thread itself: the callers are NIO's event loops, which also read and
/// write every connection given to them. A PKCS#11 call that hangs on a loop's own thread would
/// hold every connection and task of that loop until it returned: about half of all new requests
/// with two loops. The caller hands the call over and blocks, so the call runs at once on the core
/// the caller frees, with no queue and no task scheduled (measured on this machine: about 4.5 µs
/// of CPU a round trip, under load, against 100 µs and more for a derive). A call that outlasts
/// the bound is left to its companion: the caller stops waiting, its request waits for the answer
/// (or its deadline, as on the workers) as any suspended task does, and the loop serves its other
/// connections meanwhile. The caller gets a new companion for its next call; this one ends once
/// its call has returned.
final class InlineCompanion: @unchecked Sendable {
    /// One call handed over, and how its answer reaches the caller.
    private final class Call: @unchecked Sendable {
        enum State {
            /// The caller is blocked, waiting.
            case waiting
            /// The caller stopped waiting: the answer goes to the handler it left, once it has one.
            case handedOver((() -> Void)?)
            case answered
        }

        /// Guarded by the companion's mutex.
        var state = State.waiting
        let run: (WorkerContext) -> Void

        init(run: @escaping (WorkerContext) -> Void) {
            self.run = run
        }
    }

    /// The result of a call, written by the companion before it answers and read by the caller
    /// after (the companion's mutex orders the two).
    private final class Answer<R>: @unchecked Sendable {
        var value: R?
    }

    let context: WorkerContext
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let callReady = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let answerReady = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var call: Call?
    private var stopping = false
    /// A call outlasted its caller's wait: the companion serves nobody else and ends after it.
    private var abandoned = false
    /// Told, on the companion's thread, when it ends (the pool retires its context).
    private let onEnd: @Sendable (InlineCompanion) -> Void

    init(context: WorkerContext, name: String, onEnd: @escaping @Sendable (InlineCompanion) -> Void) {
        self.context = context
        self.onEnd = onEnd
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(callReady, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // The caller's bounded wait measures elapsed time, not the wall clock.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(answerReady, &attributes)
        pthread_condattr_destroy(&attributes)
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    deinit {
        pthread_cond_destroy(answerReady)
        pthread_cond_destroy(callReady)
        pthread_mutex_destroy(mutex)
        answerReady.deallocate()
        callReady.deallocate()
        mutex.deallocate()
    }

    /// What became of a call.
    enum Outcome<R> {
        case answered(R)
        /// The call outlasted the wait: the closure takes a handler for its result, called once
        /// the call returns (at once if it has).
        case overran(@Sendable (@escaping @Sendable (R) -> Void) -> Void)
    }

    /// Hands `body` to the companion and waits for it, at most `bound`.
    func perform<R>(_ body: @escaping (WorkerContext) -> R, waitingAtMost bound: Duration) -> Outcome<R> {
        let answer = Answer<R>()
        let call = Call { context in answer.value = body(context) }
        pthread_mutex_lock(mutex)
        precondition(self.call == nil && !abandoned, "a companion makes one call at a time")
        self.call = call
        pthread_cond_signal(callReady)
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        deadline = deadline.adding(bound)
        while case .waiting = call.state {
            guard pthread_cond_timedwait(answerReady, mutex, &deadline) == ETIMEDOUT else { continue }
            guard case .waiting = call.state else { break }
            abandoned = true
            call.state = .handedOver(nil)
            pthread_mutex_unlock(mutex)
            return .overran({ handler in self.whenAnswered(call) { handler(answer.value!) } })
        }
        pthread_mutex_unlock(mutex)
        return .answered(answer.value!)
    }

    /// Calls `handler` once `call` has returned: now if it has.
    private func whenAnswered(_ call: Call, _ handler: @escaping () -> Void) {
        pthread_mutex_lock(mutex)
        if case .answered = call.state {
            pthread_mutex_unlock(mutex)
            handler()
            return
        }
        call.state = .handedOver(handler)
        pthread_mutex_unlock(mutex)
    }

    /// Ends the thread once the call it makes, if any, is done.
    func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        pthread_cond_signal(callReady)
        pthread_mutex_unlock(mutex)
    }

    private func loop() {
        while true {
            pthread_mutex_lock(mutex)
            while call == nil && !stopping { pthread_cond_wait(callReady, mutex) }
            guard let call else {
                pthread_mutex_unlock(mutex)
                break
            }
            pthread_mutex_unlock(mutex)
            call.run(context)
            pthread_mutex_lock(mutex)
            let previous = call.state
            call.state = .answered
            self.call = nil
            let ends = abandoned
            pthread_cond_signal(answerReady)
            pthread_mutex_unlock(mutex)
            if case .handedOver(let handler?) = previous { handler() }
            if ends { break }
        }
        onEnd(self)
    }
}

extension timespec {
    func adding(_ duration: Duration) -> timespec {
        let (seconds, attoseconds) = duration.components
        var sum = timespec(tv_sec: tv_sec + Int(seconds), tv_nsec: tv_nsec + Int(attoseconds / 1_000_000_000))
        if sum.tv_nsec >= 1_000_000_000 {
            sum.tv_sec += 1
            sum.tv_nsec -= 1_000_000_000
        }
        return sum
    }
}
