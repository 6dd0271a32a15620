module kista.test/gorm

go 1.19

require (
	gorm.io/driver/mysql v1.5.7
	gorm.io/gorm v1.31.2
)

require (
	github.com/go-sql-driver/mysql v1.7.0 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/text v0.20.0 // indirect
)
