return run('limiter', 'THROTTLE')
