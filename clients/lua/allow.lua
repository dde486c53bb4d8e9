return run('several', true)
