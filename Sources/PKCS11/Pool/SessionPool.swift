import Foundation
import Synchronization

/// A fixed set of worker threads, each owning one PKCS#11 session, fed from a bounded queue.
///
/// Sessions are never shared between threads. PKCS#11 calls block, so they run here and not on
/// the cooperative pool. When the queue is full, work is refused at once with an `overloaded`
/// error rather than queued without bound. ``exclusive(_:)`` drains the workers and runs
/// maintenance (module recycling, re-login) while new work waits in the queue.
///
/// The pool is also a `TaskExecutor`: a task that prefers it (`withTaskExecutorPreference`)
/// runs its code on the workers, and its HSM calls then run inline on the worker's session,
/// with no thread hop on the way in or out.
///
/// With inline dispatch (``HSMDispatch/inline``), a caller that is not a worker hands its call to
/// a companion thread of its own (``InlineCompanion``, a session each) and waits for it, at most
/// ``inlineWaitBound``; the call is counted among the running jobs so that maintenance waits for
/// it; while maintenance holds the pool, calls go through the queue. A call that outlasts the bound
/// goes on without its caller's thread, which is free again; its request waits for the answer. Such
/// a call cannot be given up on at its deadline: a watchdog sees one that overruns, turns inline
/// dispatch off for good (later calls take the queue, where deadlines hold), and the health check
/// reports the stuck call until it returns.
final class SessionPool: TaskExecutor, @unchecked Sendable {
    /// Work for a worker, given the worker's context.
    typealias Operation = (WorkerContext) -> Void

    private enum WorkItem {
        case operation(Operation)
        case task(UnownedJob)
    }

    private let condition = NSCondition()
    private var queue: [WorkItem] = []
    private var queueHead = 0
    private var running = 0
    private var paused = false
    private var stopped = false
    private var generation = 0
    private var liveWorkers = 0
    /// Tasks admitted to run on the workers (``admitted(_:)``) and not yet finished.
    private var admittedTasks = 0
    /// Every worker's context, for maintenance to end their sessions while they are parked.
    private var contexts: [WorkerContext] = []
    /// Every inline companion, for shutdown to end them.
    private var companions: [InlineCompanion] = []
    /// Companions left with a call that outlasted its caller's wait, not yet returned.
    private var abandonedCompanions = 0

    let workerCount: Int
    let maxPending: Int
    let openSession: @Sendable () throws(PKCS11Error) -> Session
    /// Tells this pool's inline contexts apart from another's in a thread's list.
    let serial = SessionPool.serials.add(1, ordering: .relaxed).newValue
    private static let serials = Atomic<Int>(0)
    /// Whether callers off the workers run their calls on their own thread.
    private let inline: Atomic<Bool>
    /// The deadline inline calls are held to (``HSMConfiguration/operationTimeout``).
    private let inlineDeadline: Duration?
    private let watchdog: (any DispatchSourceTimer)?
    /// Told, once, that an inline call overran its deadline and inline dispatch is off.
    private let onInlineOverrun: @Sendable (Duration) -> Void
    /// Held by every call, alone by a creation of token objects: the module's.
    let tokenObjectLock: TokenObjectLock

    /// - Parameters:
    ///   - openSession: opens a session for the calling worker thread.
    ///   - inline: run callers' calls on their own threads (see the type's comment).
    ///   - inlineDeadline: what an inline call is held to; nil: no watchdog.
    ///   - tokenObjectLock: the module's (``PKCS11Module``); a pool of its own by default.
    init(
        workers: Int, maxPending: Int, inline: Bool = false, inlineDeadline: Duration? = nil, tokenObjectLock: TokenObjectLock = .init(),
        onInlineOverrun: @escaping @Sendable (Duration) -> Void = { _ in },
        openSession: @escaping @Sendable () throws(PKCS11Error) -> Session
    ) {
        self.workerCount = max(1, workers)
        self.maxPending = max(1, maxPending)
        self.openSession = openSession
        self.inline = Atomic(inline)
        self.inlineDeadline = inlineDeadline
        self.onInlineOverrun = onInlineOverrun
        self.tokenObjectLock = tokenObjectLock
        if inline, let inlineDeadline {
            // A look a quarter of the deadline apart (at least every second, at most 20 a second):
            // an overrun is seen within a quarter of its deadline, for a wake-up or four a second.
            let period = min(max(inlineDeadline / 4, .milliseconds(50)), .seconds(1))
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "paywarden.pkcs11.inline-watchdog"))
            timer.schedule(deadline: .now() + period / .seconds(1), repeating: period / .seconds(1))
            watchdog = timer
        } else {
            watchdog = nil
        }
        liveWorkers = workerCount
        for index in 0..<workerCount {
            let thread = Thread { [self] in workerLoop() }
            thread.name = "pkcs11-worker-\(index)"
            thread.start()
        }
        watchdog?.setEventHandler { [weak self] in self?.watchInlineCalls() }
        watchdog?.activate()
    }

    deinit {
        watchdog?.cancel()
    }

    /// Whether calls from outside the workers run on the caller's thread now.
    var runsInline: Bool { inline.load(ordering: .relaxed) }

    /// Operations and tasks queued and not yet started, and admitted tasks not yet finished.
    var pending: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count - queueHead + admittedTasks
    }

    /// Runs `body` with a worker's session on that worker's thread: inline when the caller is
    /// already on a worker of this pool, otherwise through the queue.
    ///
    /// - Parameter deadline: how long the caller waits, queued and running. When it passes, the
    ///   caller gets a `timedOut` error; a job that has not started by then never runs, and one
    ///   that is running (an HSM call that stopped answering) is left to finish on its worker,
    ///   its result discarded. An inline call is waited for by its caller, blocked, up to
    ///   ``inlineWaitBound``; one that outlasts it is left at this deadline (or the inline one) the
    ///   same way.
    ///   - inlineAllowed: false for calls that must be able to time out whatever the dispatch (the
    ///     health check).
    ///   - queueWait: told how long a queued job waited for its worker (nothing when it ran inline).
    ///   - createsTokenObjects: `body` makes or changes token objects (``tokenObjectLock``).
    func run<R: Sendable>(
        deadline: Duration? = nil, inlineAllowed: Bool = true, queueWait: QueueWaitRecorder? = nil, createsTokenObjects: Bool = false,
        _ body: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        if let context = WorkerContext.current, context.pool === self {
            return try context.withSession(createsTokenObjects: createsTokenObjects, body)
        }
        if inlineAllowed, inline.load(ordering: .relaxed) {
            switch runInline(createsTokenObjects: createsTokenObjects, body) {
            case .ran(let result): return try result.get()
            case .overran(let whenAnswered): return try await answer(of: whenAnswered, deadline: deadline)
            case .queue: break
            }
        }
        let pending = PendingRun<R>()
        // Read only when the wait is asked for (the operation observer): a clock read per call otherwise spared.
        let enqueued = queueWait.map { _ in ContinuousClock.now }
        do {
            return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<R, any Error>) in
                pending.continuation = continuation
                let operation: Operation = { context in
                    guard pending.start() else { return }  // the caller gave up before it started
                    if let queueWait, let enqueued { queueWait.record(ContinuousClock.now - enqueued) }
                    do throws(PKCS11Error) {
                        pending.finish(.success(try context.withSession(createsTokenObjects: createsTokenObjects, body)))
                    } catch {
                        pending.finish(.failure(error))
                    }
                }
                if let refusal = enqueue(.operation(operation), bounded: true) {
                    pending.finish(.failure(refusal))
                } else if let deadline {
                    pending.expire(after: deadline)
                }
            }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .poolStopped, category: .retry, message: "unexpected error \(error)")
        }
    }

    /// Counts `body` among the operations waiting for the workers while it runs, refusing it as
    /// overloaded when ``maxPending`` are already waiting. Tasks that prefer the pool as their
    /// executor are admitted through here: once admitted, their jobs are never refused.
    func admitted<R>(_ body: () async throws -> R) async throws -> R {
        if let refusal = admitTask() { throw refusal }
        defer { finishTask() }
        return try await body()
    }

    private func admitTask() -> PKCS11Error? {
        condition.withLock {
            guard admittedTasks + queue.count - queueHead < maxPending else { return .overloaded(maxPending) }
            admittedTasks += 1
            return nil
        }
    }

    private func finishTask() {
        condition.withLock { admittedTasks -= 1 }
    }

    /// Accepts a task job from the Swift runtime. Tasks are never refused: the bound applies to
    /// new HSM operations, and a task already running must be allowed to finish.
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if enqueue(.task(unowned), bounded: false) != nil {
            // Shut down: no worker will take it, but a task must always run to completion.
            let thread = Thread { [self] in unowned.runSynchronously(on: asUnownedTaskExecutor()) }
            thread.start()
        }
    }

    private enum InlineOutcome<R: Sendable> {
        case ran(Result<R, PKCS11Error>)
        /// The call outlasted the caller's wait: the closure takes a handler for its result.
        case overran(@Sendable (@escaping @Sendable (Result<R, PKCS11Error>) -> Void) -> Void)
        /// Maintenance holds the pool, or it stopped: the call goes through the queue.
        case queue
    }

    /// The result of an inline call that outlasted its caller's wait, or a `timedOut` error at
    /// `deadline`, as for a call on the workers: the call itself goes on, its result discarded.
    private func answer<R: Sendable>(
        of whenAnswered: @Sendable (@escaping @Sendable (Result<R, PKCS11Error>) -> Void) -> Void, deadline: Duration?
    ) async throws(PKCS11Error) -> R {
        let pending = PendingRun<R>()
        do {
            return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<R, any Error>) in
                pending.continuation = continuation
                whenAnswered { result in pending.finish(result) }
                if let deadline = deadline ?? inlineDeadline { pending.expire(after: deadline) }
            }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .poolStopped, category: .retry, message: "unexpected error \(error)")
        }
    }

    /// How long a caller waits for its companion before it lets the call go on without it: a
    /// derive takes about 100 µs, an RSA decryption 2 ms, so only a call that is stuck (or a
    /// machine far too busy) is let go.
    static var inlineWaitBound: Duration { .milliseconds(10) }

    /// At most this many companions may be left with calls that outlasted their callers: beyond,
    /// a module that keeps hanging gets the queue (and its deadlines) until the watchdog turns
    /// inline dispatch off, rather than a new thread per call.
    private var abandonedCompanionLimit: Int { max(2, workerCount) }

    /// Hands `body` to the calling thread's companion, counted among the running jobs, and waits
    /// up to ``inlineWaitBound`` for it.
    private func runInline<R: Sendable>(
        createsTokenObjects: Bool, _ body: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) -> InlineOutcome<R> {
        // No companion thread is started for a pool that has stopped: shutdown would not stop it.
        guard !condition.withLock({ stopped }) else { return .queue }
        let companion = InlineContexts.companion(for: self) {
            let context = WorkerContext(pool: self, isInline: true)
            let companion = InlineCompanion(context: context, name: "pkcs11-inline-\(serial)") { [weak self] ended in
                self?.companionEnded(ended)
            }
            condition.withLock {
                contexts.append(context)
                companions.append(companion)
            }
            return companion
        }
        condition.lock()
        guard !paused, !stopped, abandonedCompanions < abandonedCompanionLimit else {
            condition.unlock()
            return .queue
        }
        running += 1
        companion.context.generation = generation
        condition.unlock()
        let deadline = inlineDeadline
        let outcome = companion.perform(
            { [self] context -> Result<R, PKCS11Error> in
                let start = DispatchTime.now().uptimeNanoseconds
                context.inlineCallStart.store(start, ordering: .relaxed)
                defer {
                    context.inlineCallStart.store(0, ordering: .relaxed)
                    condition.lock()
                    running -= 1
                    if running == 0 && (paused || stopped) { condition.broadcast() }
                    condition.unlock()
                }
                let result = Result { () throws(PKCS11Error) in
                    try context.withSession(createsTokenObjects: createsTokenObjects, body)
                }
                // Past its deadline, the caller would have been answered already on the queue: the
                // result is discarded the same way.
                if let deadline, Self.elapsed(since: start) > deadline { return .failure(.timedOut(after: deadline)) }
                return result
            }, waitingAtMost: Self.inlineWaitBound)
        switch outcome {
        case .answered(let result):
            return .ran(result)
        case .overran(let whenAnswered):
            InlineContexts.forgetCompanion(for: self)
            condition.withLock { abandonedCompanions += 1 }
            // Its caller takes the answer (``answer(of:deadline:)``), and the count goes down with it.
            return .overran({ [self] handler in
                whenAnswered { result in
                    self.condition.withLock { self.abandonedCompanions -= 1 }
                    handler(result)
                }
            })
        }
    }

    /// A companion's thread ended (its call outlasted its caller, or its caller's thread ended, or
    /// the pool stopped): its context leaves the pool with its session.
    private func companionEnded(_ companion: InlineCompanion) {
        condition.withLock {
            companions.removeAll { $0 === companion }
        }
        retire(companion.context)
    }

    private static func elapsed(since start: UInt64) -> Duration {
        .nanoseconds(Int64(DispatchTime.now().uptimeNanoseconds &- start))
    }

    /// Forgets the inline context of a thread that ended, closing its session. During maintenance
    /// (which ends every session itself, and may be between C_Finalize and C_Initialize) or
    /// shutdown (which closes them), it is only marked, and maintenance drops it when it ends.
    func retire(_ context: WorkerContext) {
        condition.lock()
        defer { condition.unlock() }
        guard !paused, !stopped else {
            context.threadEnded = true
            return
        }
        contexts.removeAll { $0 === context }
        // Under the lock: maintenance cannot begin meanwhile.
        context.close()
    }

    /// The longest an inline call running now has run, when that is past its deadline.
    var overdueInlineCall: Duration? {
        guard let inlineDeadline else { return nil }
        let started = condition.withLock { contexts.filter(\.isInline) }.map { $0.inlineCallStart.load(ordering: .relaxed) }
        guard let earliest = started.filter({ $0 != 0 }).min() else { return nil }
        let elapsed = Self.elapsed(since: earliest)
        return elapsed > inlineDeadline ? elapsed : nil
    }

    /// The watchdog's look: an inline call past its deadline turns inline dispatch off.
    private func watchInlineCalls() {
        guard inline.load(ordering: .relaxed), let overdue = overdueInlineCall else { return }
        guard inline.compareExchange(expected: true, desired: false, ordering: .relaxed).exchanged else { return }
        onInlineOverrun(overdue)
    }

    /// Waits until no worker is running anything, runs `body` on a dedicated thread while the
    /// workers stay parked, then lets them go on with fresh sessions (old handles may be invalid).
    func exclusive<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await DedicatedThread.run(name: "pkcs11-maintenance") { [self] in
            condition.lock()
            while paused { condition.wait() }
            paused = true
            while running > 0 { condition.wait() }
            condition.unlock()
            defer {
                condition.lock()
                generation += 1
                // Their sessions were ended with the others' (or will be closed as they go).
                contexts.removeAll { $0.threadEnded }
                paused = false
                condition.broadcast()
                condition.unlock()
            }
            return try body()
        }
    }

    /// Ends every worker's session; only from inside ``exclusive(_:)``, while the workers are
    /// parked (the pool's lock orders this before their next job). Sessions of a module that
    /// was re-initialised are forgotten (their handles may now name nothing, or a session opened
    /// since); otherwise they are closed, with the session objects (key copies) they hold.
    func endWorkerSessions(moduleRestarted: Bool) {
        condition.lock()
        let contexts = self.contexts
        condition.unlock()
        for context in contexts { context.endSession(closing: !moduleRestarted) }
    }

    /// Stops the workers after the queue drains. Sessions are closed by their threads.
    func shutdown() {
        watchdog?.cancel()
        condition.lock()
        stopped = true
        condition.broadcast()
        while liveWorkers > 0 || running > 0 { condition.wait() }
        let inlineContexts = contexts.filter(\.isInline)
        let companions = self.companions
        condition.unlock()
        // No inline call runs now, and none starts once stopped: the companions end, their
        // contexts without a session.
        for context in inlineContexts { context.close() }
        for companion in companions { companion.stop() }
    }

    private func enqueue(_ item: WorkItem, bounded: Bool) -> PKCS11Error? {
        condition.lock()
        defer { condition.unlock() }
        if stopped {
            return PKCS11Error(code: .poolStopped, category: .retry, message: "the HSM session pool is shut down")
        }
        if bounded && admittedTasks + queue.count - queueHead >= maxPending { return .overloaded(maxPending) }
        queue.append(item)
        condition.signal()
        return nil
    }

    private func workerLoop() {
        let context = WorkerContext(pool: self)
        condition.lock()
        contexts.append(context)
        condition.unlock()
        WorkerContext.bind(context) {
            condition.lock()
            while true {
                // Maintenance holds the workers even during shutdown: no session runs beside
                // a C_Finalize.
                while paused || (!stopped && queueHead == queue.count) { condition.wait() }
                if stopped && queueHead == queue.count { break }
                let item = queue[queueHead]
                queueHead += 1
                if queueHead >= 1024 && queueHead * 2 >= queue.count {
                    queue.removeFirst(queueHead)
                    queueHead = 0
                }
                running += 1
                context.generation = generation
                condition.unlock()

                switch item {
                case .operation(let operation): operation(context)
                case .task(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                }

                condition.lock()
                running -= 1
                if running == 0 && (paused || stopped) { condition.broadcast() }
            }
            condition.unlock()
            // Close the session before reporting this worker gone: shutdown's caller finalizes
            // the module next, and a C_CloseSession racing C_Finalize can crash the module.
            context.close()
            condition.lock()
            liveWorkers -= 1
            condition.broadcast()
            condition.unlock()
        }
    }
}
