module github.com/idlemux/idlemux/grpcidle

go 1.26.0

require (
	github.com/idlemux/idlemux v0.0.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
)

replace github.com/idlemux/idlemux => ../
