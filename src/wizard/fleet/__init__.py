"""Many repositories, one program: a fleet on Temporal.

A fleet is a workflow and a run is its activity. `wizard fleet run` starts one parent
workflow (`FleetWorkflow`) that admits repositories one by one, within its parallelism, its
pace and its budget, and starts a child workflow (`RepoWorkflow`) for each. A child asks any
worker to take the repository (`claim`), which answers with its own task queue; every later
step runs on that worker, where the repository's workspace is:

    claim ─▶ prepare (clone into a private workspace)
          ─▶ run (`wizard run --preview --patch-out`: sandboxed, journaled, verified)
          ─▶ publish (the patch as one commit on `wizard/<program>`, when asked)
          ─▶ clean up (the workspace goes; the result stays in the workflow's history)

Temporal gives the rest: a step that finished is never run again after a crash, a step whose
worker died is retried elsewhere (or on the same worker, started again), and each step's
retry policy says which failures are worth another attempt. A run that ended on an abort
case, a security violation, unverified, or a spent budget ended: it is a value, never
retried. Secrets never enter the workflow's history: the gateway and its key are read by the
worker from its own environment.

`temporalio` is imported only here, below `wizard.fleet`; install it with `wizard[fleet]`.
"""
