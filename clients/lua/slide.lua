return limiter('SLIDE')
