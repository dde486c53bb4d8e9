return limiter('THROTTLE')
