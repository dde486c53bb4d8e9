return refund()
